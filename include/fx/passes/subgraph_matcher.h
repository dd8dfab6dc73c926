#pragma once
// fx::passes::SubgraphMatcher: finds the places where a pattern graph occurs
// in a larger graph (torch.fx.passes.utils.matcher_utils.SubgraphMatcher).
//
//   fx::Graph pattern;                      // def pattern(x): return torch.relu(torch.neg(x))
//   fx::Node* x = pattern.placeholder("x");
//   pattern.output(pattern.call_function("torch.relu", {pattern.call_function("torch.neg", {x})}));
//   fx::passes::SubgraphMatcher matcher(pattern);
//   for (const fx::passes::InternalMatch& m : matcher.match(gm.graph()))
//     std::cout << m.returning_nodes[0]->name() << "\n";   // the graph's relu nodes
//
// Matching works on use-def edges, not on names. The anchors are the pattern's
// sinks (the returned nodes whose only user is the output); from each
// candidate for an anchor (a graph node of the same op and target), pattern
// and graph are walked backwards together:
// - a pattern placeholder matches any value (a node, or a literal argument),
//   the same one wherever it is used, and never a node matched elsewhere;
// - another pattern node matches a node of the same op and target whose
//   arguments (nested lists/tuples flattened, as FX's pytree does) and
//   keyword arguments (the same keys) match in turn;
// - literal arguments must be equal and of the same kind (1 is not 1.0).
// A match is kept only when no internal node is used outside it (the
// returned nodes may be), when replacing it by one node would not create a
// cycle, and, with remove_overlapping_matches, when it shares no matched
// node with an earlier match. Matches come in graph order of their anchors.
//
// Cost: candidates come from Graph::find_nodes (the (op, target) bucket), and
// each is checked in time proportional to the pattern; the cycle check walks
// only the nodes between a match's first and last node. For a pattern with
// several anchors, the candidates of the later ones are the users of a node
// already matched, where the anchor has such an input.

#include <fx/argument.h>
#include <fx/graph.h>
#include <fx/node.h>

#include <unordered_map>
#include <vector>

namespace fx::passes {

struct InternalMatch {
  // The pattern's anchors (pattern nodes), as FX's InternalMatch.anchors.
  std::vector<Node*> anchors;
  // Pattern node -> what it matched in the graph: a graph node, or, for a
  // placeholder matched to a literal argument, that literal.
  std::unordered_map<const Node*, Argument> nodes_map;
  // What each pattern placeholder matched, in the pattern's placeholder order.
  std::vector<Argument> placeholder_nodes;
  // The graph nodes matched by the pattern's returned nodes, in the order
  // of the pattern output's input nodes.
  std::vector<Node*> returning_nodes;

  // nodes_map[pattern_node] as a graph node (nullptr for a literal or a
  // pattern node this match does not map).
  Node* graph_node(const Node* pattern_node) const;
};

struct SubgraphMatcherOptions {
  // The pattern's output node is part of the pattern: it matches the
  // graph's output only.
  bool match_output = false;
  // Pattern placeholders match graph placeholders only (otherwise they are
  // wildcards).
  bool match_placeholder = false;
  // Of overlapping matches, only the first is returned.
  bool remove_overlapping_matches = true;
  // Literal arguments are wildcards (from torch.fx 2.x).
  bool ignore_literals = false;
};

class SubgraphMatcher {
 public:
  // Throws fx::Error if the pattern is empty, does not end with its output
  // node, returns no node, or has a node without users (dead code).
  explicit SubgraphMatcher(const Graph& pattern, SubgraphMatcherOptions options = {});
  SubgraphMatcher(const Graph& pattern, bool match_output, bool match_placeholder,
                  bool remove_overlapping_matches = true, bool ignore_literals = false)
      : SubgraphMatcher(pattern, SubgraphMatcherOptions{match_output, match_placeholder,
                                                        remove_overlapping_matches, ignore_literals}) {}

  // Every match of the pattern in `graph` (see the top of this file).
  std::vector<InternalMatch> match(const Graph& graph) const;

  const Graph& pattern() const { return pattern_; }
  const std::vector<Node*>& pattern_anchors() const { return anchors_; }
  const std::vector<Node*>& pattern_placeholder_nodes() const { return placeholders_; }
  const std::vector<Node*>& pattern_returning_nodes() const { return returning_; }

 private:
  class Search;
  const Graph& pattern_;
  SubgraphMatcherOptions options_;
  std::vector<Node*> nodes_;  // the pattern's nodes, in order; a node's index is its position
  std::unordered_map<const Node*, int> index_;
  std::vector<Node*> placeholders_;
  std::vector<Node*> returning_;
  std::vector<Node*> anchors_;
};

}  // namespace fx::passes
