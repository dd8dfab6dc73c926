// replace_pattern and replace_pattern_with_filters: torch/fx/subgraph_rewriter.py
// (written after 1.13's replace_pattern; the filters, ignore_literals,
// ReplacedPatterns and the attribute copy of _replace_attributes from torch.fx
// 2.x; docs/subgraph_rewriting.md lists where it differs from 2.14). Everything
// that can be wrong with the inputs is checked before the graph is touched.
#include <fx/error.h>
#include <fx/subgraph_rewriter.h>

#include <string>
#include <unordered_map>
#include <utility>
#include "../ir/repr.h"

namespace fx {

namespace {

using detail::quoted;

// Python's plain function given to symbolic_trace, as a module: forward is
// the function, its parameters the names given.
class FunctionModule : public Module {
 public:
  FunctionModule(std::vector<Param> params, Pattern::Function fn)
      : Module("pattern", std::move(params)), fn_(std::move(fn)) {}
  Value forward(const std::vector<Value>& args) override { return fn_(args); }

 private:
  Pattern::Function fn_;
};

std::shared_ptr<const Graph> keep_alive(const Pattern::Resolved& r) {
  if (r.traced) return std::shared_ptr<const Graph>(r.traced, r.graph);
  return std::shared_ptr<const Graph>(r.graph, [](const Graph*) {});
}

std::vector<Node*> placeholders_of(const Graph& g) {
  std::vector<Node*> out;
  for (Node* n : g.nodes())
    if (n->op() == Op::placeholder) out.push_back(n);
  return out;
}

// The replacement's outputs as FX's graph_copy returns them: one node, or a
// tuple / list of nodes. Throws for anything that cannot take over the uses
// of a matched node.
size_t replacement_output_count(const Graph& replacement, size_t pattern_returns) {
  const Node* out = replacement.output_node();
  if (!out || out->args().empty())
    throw Error("replace_pattern: the replacement graph has no output node; end it with graph.output(...)");
  const Argument& rv = out->args()[0];
  std::vector<Argument> items;
  if (const auto* t = std::get_if<Tuple>(&rv.storage()))
    items = t->items;
  else if (const auto* l = std::get_if<List>(&rv.storage()))
    items = l->items;
  else
    items = {rv};
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].is_node())
      throw Error("replace_pattern: output " + std::to_string(i) + " of the replacement is a " +
                  std::string(items[i].kind_name()) +
                  ", not a node; a replacement must return values computed from its inputs");
  if (items.size() != pattern_returns)
    throw Error("replace_pattern: the replacement returns " + std::to_string(items.size()) +
                " value(s) but the pattern returns " + std::to_string(pattern_returns) +
                " node(s); make the replacement return one value per node the pattern returns");
  return items.size();
}

// The get_attr / call_module targets of the replacement must be in gm, or in
// the replacement's module, from which they are copied (_replace_attributes).
void check_attributes(const GraphModule& gm, const Pattern::Resolved& replacement) {
  for (Node* n : replacement.graph->nodes()) {
    if (n->op() != Op::get_attr && n->op() != Op::call_module) continue;
    const std::string& path = n->target().str();
    // The tracer names a captured tensor `_tensor_constantN` in every module
    // it traces: the GraphModule's own constant of that name (which takes
    // precedence) would silently stand in for the replacement's.
    if (n->op() == Op::get_attr && path.rfind("_tensor_constant", 0) == 0 && replacement.owner &&
        gm.has_attribute(path) && replacement.owner->has_attribute(path) &&
        gm.get_tensor(path).unsafeGetTensorImpl() !=
            replacement.owner->get_tensor(path).unsafeGetTensorImpl())
      throw Error("replace_pattern: the replacement's constant '" + path +
                  "' has the name of another tensor of the GraphModule; register the tensor on an fx::Module "
                  "replacement under a name of its own");
    if (gm.has_attribute(path) || (replacement.owner && replacement.owner->has_attribute(path))) continue;
    throw Error("replace_pattern: the replacement's node " + quoted(n) + " (" +
                std::string(op_name(n->op())) + ") refers to '" + path +
                "', which neither the GraphModule nor the replacement has; give the replacement as the "
                "fx::Module or GraphModule that owns it");
  }
}

// Copies what the new nodes refer to and gm lacks from the replacement's
// module: submodules with clone(), tensors as parameter, buffer or attribute
// as they are there. What gm already has takes precedence, as in FX.
void copy_attributes(GraphModule& gm, const Pattern::Resolved& replacement) {
  if (!replacement.owner) return;
  const GraphModule& from = *replacement.owner;
  for (Node* n : replacement.graph->nodes()) {
    if (n->op() != Op::get_attr && n->op() != Op::call_module) continue;
    const std::string& path = n->target().str();
    if (gm.has_attribute(path)) continue;
    if (torch::nn::Module* m = from.get_submodule(path)) {
      std::shared_ptr<torch::nn::Module> copy;
      try {
        copy = m->clone();
      } catch (const std::exception& e) {
        throw Error("replace_pattern: cannot copy the replacement's submodule '" + path +
                    "' into the GraphModule: " + e.what());
      }
      gm.add_submodule(path, std::move(copy));
      continue;
    }
    size_t dot = path.rfind('.');
    std::string parent_path = dot == std::string::npos ? "" : path.substr(0, dot);
    std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
    torch::nn::Module* owner = from.get_submodule(parent_path);
    torch::nn::Module* target = gm.get_submodule(parent_path);
    if (!target)
      throw Error("replace_pattern: cannot copy the replacement's tensor '" + path +
                  "': the GraphModule has no module '" + parent_path + "' to hold it");
    at::Tensor t = from.get_tensor(path);
    at::Tensor copy = t.detach().clone().set_requires_grad(t.requires_grad());
    if (owner && owner->named_parameters(false).find(name)) {
      target->register_parameter(name, copy, t.requires_grad());
    } else if (owner && owner->named_buffers(false).find(name)) {
      target->register_buffer(name, copy);
    } else if (auto* fm = dynamic_cast<Module*>(target)) {
      fm->register_attribute(name, copy);
    } else {
      throw Error("replace_pattern: cannot copy the replacement's tensor '" + path + "': module '" +
                  parent_path + "' of the GraphModule cannot hold a plain tensor attribute");
    }
  }
}

}  // namespace

void Pattern::throw_arity(size_t takes, size_t names) {
  throw Error("fx::Pattern: the function takes " + std::to_string(takes) + " fx::Value(s) but " +
              std::to_string(names) + " parameter name(s) were given; give one name per parameter");
}

Pattern::Resolved Pattern::resolve() const {
  Resolved r;
  if (graph_) {
    r.graph = graph_;
  } else if (gm_) {
    r.graph = &gm_->graph();
    r.owner = gm_;
  } else {
    std::shared_ptr<GraphModule> traced;
    if (module_) {
      traced = symbolic_trace(*module_);
    } else {
      if (!fn_) throw Error("fx::Pattern: the pattern function is empty");
      FunctionModule root(params_, fn_);
      traced = symbolic_trace(root);
    }
    r.traced = traced;
    r.graph = &traced->graph();
    r.owner = traced.get();
  }
  return r;
}

std::vector<ReplacedPatterns> replace_pattern_with_filters(GraphModule& gm, const Pattern& pattern,
                                                           const Pattern& replacement,
                                                           const std::vector<MatchFilter>& match_filters,
                                                           bool ignore_literals) {
  Graph& graph = gm.graph();
  Pattern::Resolved pat = pattern.resolve();
  Pattern::Resolved rep = replacement.resolve();
  if (pat.graph == &graph || rep.graph == &graph)
    throw Error(
        "replace_pattern: the pattern and the replacement must be graphs other than the GraphModule's own");
  for (size_t i = 0; i < match_filters.size(); ++i)
    if (!match_filters[i])
      throw Error("replace_pattern_with_filters: match filter " + std::to_string(i) + " is empty");

  passes::SubgraphMatcher matcher(*pat.graph,
                                  passes::SubgraphMatcherOptions{false, false, true, ignore_literals});
  rep.graph->lint();
  std::vector<Node*> rep_placeholders = placeholders_of(*rep.graph);
  if (rep_placeholders.size() != matcher.pattern_placeholder_nodes().size())
    throw Error(
        "replace_pattern: the replacement takes " + std::to_string(rep_placeholders.size()) +
        " input(s) but the pattern takes " + std::to_string(matcher.pattern_placeholder_nodes().size()) +
        "; give the replacement the pattern's parameters, in the same order, even those it does not use");
  replacement_output_count(*rep.graph, matcher.pattern_returning_nodes().size());
  check_attributes(gm, rep);

  std::vector<passes::InternalMatch> matches;
  for (auto& m : matcher.match(graph)) {
    bool keep = true;
    for (const auto& filter : match_filters) keep = keep && filter(m, graph, *pat.graph);
    if (keep) matches.push_back(std::move(m));
  }
  for (const auto& m : matches) {
    bool used = false;
    for (Node* r : m.returning_nodes) used = used || r->num_users() > 0;
    if (!used)
      throw Error("replace_pattern: the match ending at node " + quoted(m.returning_nodes[0]) +
                  " has no users, so there is no place to insert its replacement; run "
                  "graph.eliminate_dead_code() first");
  }

  std::shared_ptr<const Graph> pattern_graph = keep_alive(pat);
  const std::vector<Node*>& pat_placeholders = matcher.pattern_placeholder_nodes();
  std::vector<Node*> pattern_nodes = pat.graph->nodes().to_vector();
  // The returned nodes of earlier matches are gone: later matches read their
  // replacements instead.
  std::unordered_map<const Node*, Node*> changed;
  std::vector<ReplacedPatterns> result;
  result.reserve(matches.size());

  for (auto& m : matches) {
    std::unordered_map<const Node*, Argument> val_map;
    for (size_t i = 0; i < rep_placeholders.size(); ++i) {
      Argument& gn = m.placeholder_nodes[i];
      if (Node* n = gn.node()) {
        auto it = changed.find(n);
        if (it != changed.end()) {
          gn = it->second;
          m.nodes_map[pat_placeholders[i]] = it->second;
        }
      }
      val_map[rep_placeholders[i]] = gn;
    }

    Node* first_user = nullptr;
    for (Node* r : m.returning_nodes)
      for (Node* u : r->users())
        if (!first_user || u->is_before(first_user)) first_user = u;
    if (!first_user)
      throw Error("replace_pattern: the match ending at node " + quoted(m.returning_nodes[0]) +
                  " lost its users to an earlier replacement; there is no place to insert its replacement");

    std::vector<Node*> copies;
    std::vector<Node*> outputs;
    {
      InsertPoint guard = graph.inserting_before(first_user);
      auto lookup = [&val_map](Node* n) -> Argument { return val_map.at(n); };
      for (Node* n : rep.graph->nodes()) {
        if (val_map.count(n)) continue;
        if (n->op() == Op::output) {
          Argument rv = map_arg(n->args()[0], lookup);
          if (const auto* t = std::get_if<Tuple>(&rv.storage())) {
            for (const auto& x : t->items) outputs.push_back(x.node());
          } else if (const auto* l = std::get_if<List>(&rv.storage())) {
            for (const auto& x : l->items) outputs.push_back(x.node());
          } else {
            outputs.push_back(rv.node());
          }
          break;
        }
        Node* copy = graph.node_copy(*n, lookup);
        val_map[n] = copy;
        copies.push_back(copy);
      }
    }
    for (size_t i = 0; i < m.returning_nodes.size(); ++i) {
      Node* gn = m.returning_nodes[i];
      // A replacement output that is one of its inputs maps to a literal
      // when that input matched one; it cannot take over a node's uses.
      if (!outputs[i])
        throw Error("replace_pattern: output " + std::to_string(i) +
                    " of the replacement is an input that matched a literal; it cannot replace node " +
                    quoted(gn));
      gn->replace_all_uses_with(outputs[i]);
      changed[gn] = outputs[i];
    }
    for (auto it = pattern_nodes.rbegin(); it != pattern_nodes.rend(); ++it) {
      if ((*it)->op() == Op::placeholder || (*it)->op() == Op::output) continue;
      graph.erase_node(m.graph_node(*it));
    }
    result.push_back(
        ReplacedPatterns{m.anchors[0], std::move(m.nodes_map), std::move(copies), pattern_graph});
  }

  if (!result.empty()) copy_attributes(gm, rep);
  gm.recompile();
  return result;
}

std::vector<Match> replace_pattern(GraphModule& gm, const Pattern& pattern, const Pattern& replacement) {
  std::vector<Match> out;
  for (auto& r : replace_pattern_with_filters(gm, pattern, replacement))
    out.push_back(Match{r.anchor, std::move(r.nodes_map), std::move(r.pattern_graph)});
  return out;
}

}  // namespace fx
