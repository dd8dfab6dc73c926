#pragma once
// fx::passes::eliminate_dead_code: removes the nodes whose value nobody uses
// and whose call has no effect (torch.fx's Graph.eliminate_dead_code), by
// fxcpp's one purity rule (Node::is_impure, fx/impurity.h), the rule
// Graph::eliminate_dead_code asks too:
//
//   // forward(x): a = x + 1 (unused); x.add_(1); torch.rand(3) (unused); return x * 2
//   bool changed = fx::passes::eliminate_dead_code(*gm);  // removes only `a`
//
// torch.fx 2.14 would also remove the call_method `x.add_(1)`, which changes
// the result.
//
// Linear: one walk from the output backwards; a node whose last user was
// just erased is seen after that user.

#include <fx/graph.h>
#include <fx/graph_module.h>

namespace fx::passes {

// Erases unused pure nodes, last to first. Returns whether anything changed.
// (torch.fx lints first, to be sure the graph is topologically sorted; an
// fxcpp Graph always is, so this pass does not: call lint() if in doubt.)
bool eliminate_dead_code(Graph& graph);
// The same on gm.graph() and on the branches of its cond and while_loop
// nodes (each a GraphModule of its own), then recompile() of each that
// changed.
bool eliminate_dead_code(GraphModule& gm);

}  // namespace fx::passes
