// SubgraphMatcher: torch/fx/passes/utils/matcher_utils.py, with 1.13's rules
// for arguments and ignore_literals from torch.fx 2.x (docs/subgraph_rewriting.md
// lists where 2.14's matcher differs). The partial match is one slot per
// pattern node plus a reverse map of the graph nodes in use; backtracking
// undoes assignments from a trail instead of copying the match as FX does.
#include <fx/error.h>
#include <fx/passes/subgraph_matcher.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include "../ir/repr.h"

namespace fx::passes {

namespace {

using fx::detail::quoted;

bool is_placeholder_or_output(const Node* n) { return n->op() == Op::placeholder || n->op() == Op::output; }

// pytree.tree_flatten of a node's args: tuples, lists and dicts are opened,
// everything else (nodes, literals, slices) is a leaf.
void flatten(const Argument& a, std::vector<const Argument*>& out) {
  if (const auto* t = std::get_if<Tuple>(&a.storage())) {
    for (const auto& x : t->items) flatten(x, out);
  } else if (const auto* l = std::get_if<List>(&a.storage())) {
    for (const auto& x : l->items) flatten(x, out);
  } else if (const auto* d = std::get_if<Dict>(&a.storage())) {
    for (const auto& [k, v] : d->items) flatten(v, out);
  } else {
    out.push_back(&a);
  }
}

// The leaves FX compares pairwise: flattened args, then the kwarg values in
// the pattern's key order. False when the keyword sets differ.
bool aligned_arguments(const Node* pn, const Node* gn, std::vector<const Argument*>& p,
                       std::vector<const Argument*>& g) {
  for (const auto& a : pn->args()) flatten(a, p);
  for (const auto& a : gn->args()) flatten(a, g);
  if (pn->kwargs().size() != gn->kwargs().size()) return false;
  for (const auto& [key, value] : pn->kwargs()) {
    const Argument* other = gn->kwarg(key);
    if (!other) return false;
    p.push_back(&value);
    g.push_back(other);
  }
  return true;
}

}  // namespace

Node* InternalMatch::graph_node(const Node* pattern_node) const {
  auto it = nodes_map.find(pattern_node);
  return it == nodes_map.end() ? nullptr : it->second.node();
}

SubgraphMatcher::SubgraphMatcher(const Graph& pattern, SubgraphMatcherOptions options)
    : pattern_(pattern), options_(options) {
  nodes_ = pattern.nodes().to_vector();
  if (nodes_.empty())
    throw Error("SubgraphMatcher: the pattern graph is empty; give it at least one node and an output");
  Node* output = nodes_.back();
  if (output->op() != Op::output)
    throw Error("SubgraphMatcher: the pattern graph has no output node (its last node is " + quoted(output) +
                "); end the pattern with graph.output(...) returning the values the match produces");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* n = nodes_[i];
    index_.emplace(n, static_cast<int>(i));
    if (n->op() != Op::output && n->num_users() == 0)
      throw Error("SubgraphMatcher: pattern node " + quoted(n) +
                  " has no users (dead code); remove it, or return it from the pattern's output");
    if (n->op() == Op::placeholder) placeholders_.push_back(n);
  }
  returning_ = output->all_input_nodes();
  if (returning_.empty())
    throw Error(
        "SubgraphMatcher: the pattern's output returns no node; return the values the pattern computes");
  if (options_.match_output) {
    anchors_ = {output};
  } else {
    // A returned node used only by the output is a sink of the pattern.
    for (Node* n : returning_)
      if (n->num_users() == 1) anchors_.push_back(n);
  }
}

// One call of match(): the partial match and the matches found.
class SubgraphMatcher::Search {
 public:
  Search(const SubgraphMatcher& m, const Graph& g)
      : m_(m), g_(g), slot_(m.nodes_.size()), mapped_(m.nodes_.size(), 0) {
    returning_.insert(m.returning_.begin(), m.returning_.end());
  }

  std::vector<InternalMatch> run() {
    candidates_.resize(m_.anchors_.size());
    for (size_t k = 0; k < m_.anchors_.size(); ++k) {
      candidates_[k] = all_candidates(m_.anchors_[k]);
      // An anchor without candidates: fxcpp finds nothing. torch.fx 2.14
      // finds nothing when that is its only anchor, but fails (KeyError)
      // when another anchor has candidates; 1.13 failed with a KeyError.
      if (candidates_[k].empty()) return {};
    }
    backtrack(0);
    if (!m_.options_.remove_overlapping_matches) return std::move(found_);
    std::vector<InternalMatch> kept;
    std::unordered_set<const Node*> taken;
    for (auto& match : found_) {
      bool overlap = false;
      for (const auto& [pn, gn] : match.nodes_map)
        if (!is_placeholder_or_output(pn) && taken.count(gn.node())) overlap = true;
      if (overlap) continue;
      for (const auto& [pn, gn] : match.nodes_map)
        if (!is_placeholder_or_output(pn)) taken.insert(gn.node());
      kept.push_back(std::move(match));
    }
    return kept;
  }

 private:
  int index(const Node* pn) const { return m_.index_.at(pn); }

  bool nodes_are_equal(const Node* pn, const Node* gn) const {
    if (!m_.options_.match_placeholder && pn->op() == Op::placeholder) return true;
    if (pn->op() != gn->op()) return false;
    if (pn->op() == Op::placeholder || pn->op() == Op::output) return true;
    return pn->target() == gn->target();
  }

  std::vector<Node*> all_candidates(const Node* anchor) const {
    if (anchor->op() == Op::output) {
      if (Node* out = g_.output_node()) return {out};
      return {};
    }
    if (anchor->op() == Op::placeholder) {
      // A wildcard anchor (a pattern returning an input) matches any node.
      std::vector<Node*> all;
      for (Node* n : g_.nodes())
        if (nodes_are_equal(anchor, n)) all.push_back(n);
      return all;
    }
    // find_nodes gives creation order; FX tries candidates in graph order,
    // which differs once nodes were inserted before others.
    std::vector<Node*> found = g_.find_nodes(anchor->op(), anchor->target());
    std::sort(found.begin(), found.end(), [](const Node* a, const Node* b) { return a->is_before(b); });
    return found;
  }

  // For a later anchor: a node that feeds it positionally and is already
  // matched to graph node g means every candidate is a user of g. Exact, and
  // it keeps multi-anchor patterns from trying every pair of candidates.
  const std::vector<Node*>* narrowed_candidates(size_t k, std::vector<Node*>& storage) const {
    const Node* anchor = m_.anchors_[k];
    std::vector<const Argument*> leaves;
    for (const auto& a : anchor->args()) flatten(a, leaves);
    for (const Argument* leaf : leaves) {
      Node* q = leaf->node();
      if (!q) continue;
      int i = index(q);
      if (!mapped_[i] || !slot_[i].is_node()) continue;
      for (Node* u : slot_[i].node()->users())
        if (nodes_are_equal(anchor, u)) storage.push_back(u);
      std::sort(storage.begin(), storage.end(), [](const Node* a, const Node* b) { return a->is_before(b); });
      storage.erase(std::unique(storage.begin(), storage.end()), storage.end());
      return &storage;
    }
    return &candidates_[k];
  }

  void assign(int i, const Argument& value) {
    slot_[i] = value;
    mapped_[i] = 1;
    if (Node* n = value.node()) used_.emplace(n, i);
    trail_.push_back(i);
  }
  void undo(size_t to) {
    while (trail_.size() > to) {
      int i = trail_.back();
      trail_.pop_back();
      if (Node* n = slot_[i].node()) used_.erase(n);
      mapped_[i] = 0;
      slot_[i] = Argument();
    }
  }

  // FX's _match_args for a pair that is not two nodes.
  bool match_literals(const Argument& pa, const Argument& ga) {
    if (Node* pn = pa.node()) {
      if (ga.is_node() || pn->op() != Op::placeholder) return false;
      int i = index(pn);
      if (mapped_[i]) return slot_[i] == ga;
      assign(i, ga);
      return true;
    }
    if (ga.is_node()) return m_.options_.ignore_literals;
    return m_.options_.ignore_literals || pa == ga;
  }

  bool match_nodes(Node* pn, Node* gn) {
    int i = index(pn);
    if (mapped_[i]) return slot_[i].node() == gn;
    if (used_.count(gn)) return false;
    if (!nodes_are_equal(pn, gn)) return false;
    assign(i, gn);
    if (pn->op() == Op::placeholder) return true;
    std::vector<const Argument*> p, g;
    if (!aligned_arguments(pn, gn, p, g) || p.size() != g.size()) return false;
    for (size_t j = 0; j < p.size(); ++j) {
      bool ok = p[j]->is_node() && g[j]->is_node() ? match_nodes(p[j]->node(), g[j]->node())
                                                   : match_literals(*p[j], *g[j]);
      if (!ok) return false;
    }
    return true;
  }

  void backtrack(size_t k) {
    if (k == m_.anchors_.size()) {
      record();
      return;
    }
    std::vector<Node*> storage;
    const std::vector<Node*>* cands = k == 0 ? &candidates_[0] : narrowed_candidates(k, storage);
    size_t saved = trail_.size();
    for (Node* candidate : *cands) {
      if (match_nodes(m_.anchors_[k], candidate)) backtrack(k + 1);
      undo(saved);
    }
  }

  void record() {
    InternalMatch match;
    match.anchors = m_.anchors_;
    for (const Node* p : m_.placeholders_) {
      int i = index(p);
      // A placeholder reached only through a keyword container is never
      // bound; FX fails on such a match (KeyError), fxcpp skips it.
      if (!mapped_[i]) return;
      match.placeholder_nodes.push_back(slot_[i]);
    }
    for (const Node* r : m_.returning_) {
      int i = index(r);
      // A returned placeholder bound to a literal cannot be replaced.
      if (!mapped_[i] || !slot_[i].is_node()) return;
      match.returning_nodes.push_back(slot_[i].node());
    }
    if (!is_contained() || !is_acyclic()) return;
    for (size_t i = 0; i < slot_.size(); ++i)
      if (mapped_[i]) match.nodes_map.emplace(m_.nodes_[i], slot_[i]);
    found_.push_back(std::move(match));
  }

  // No node of the match but the returned ones (and what placeholders
  // matched) is used outside it.
  bool is_contained() const {
    for (size_t i = 0; i < slot_.size(); ++i) {
      const Node* pn = m_.nodes_[i];
      if (!mapped_[i] || pn->op() == Op::placeholder || returning_.count(pn)) continue;
      Node* gn = slot_[i].node();
      if (!gn) continue;
      for (Node* user : gn->users())
        if (!used_.count(user)) return false;
    }
    return true;
  }

  bool in_partition(const Node* n) const {
    auto it = used_.find(n);
    return it != used_.end() && !is_placeholder_or_output(m_.nodes_[it->second]);
  }

  // fuser_utils.validate_partition: replacing the matched nodes by one must
  // not create a cycle, i.e. no path leaves the match and comes back. Every
  // edge goes forward in the graph, so the walk stops at the match's last node.
  bool is_acyclic() const {
    const Node* last = nullptr;
    std::vector<Node*> stack;
    for (size_t i = 0; i < slot_.size(); ++i) {
      Node* gn = mapped_[i] ? slot_[i].node() : nullptr;
      if (!gn || is_placeholder_or_output(m_.nodes_[i])) continue;
      if (!last || last->is_before(gn)) last = gn;
      for (Node* user : gn->users())
        if (!in_partition(user)) stack.push_back(user);
    }
    std::unordered_set<const Node*> visited;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (in_partition(n)) return false;
      if (!visited.insert(n).second || !n->is_before(last)) continue;
      for (Node* user : n->users()) stack.push_back(user);
    }
    return true;
  }

  const SubgraphMatcher& m_;
  const Graph& g_;
  std::vector<Argument> slot_;  // pattern node index -> what it matched
  std::vector<char> mapped_;
  std::unordered_map<const Node*, int> used_;  // graph node -> pattern node index
  std::vector<int> trail_;
  std::unordered_set<const Node*> returning_;
  std::vector<std::vector<Node*>> candidates_;
  std::vector<InternalMatch> found_;
};

std::vector<InternalMatch> SubgraphMatcher::match(const Graph& graph) const {
  return Search(*this, graph).run();
}

}  // namespace fx::passes
