#pragma once
// fx::passes::eliminate_dead_code: removes the nodes whose value nobody uses
// and whose call has no effect (torch.fx's Graph.eliminate_dead_code), with
// fxcpp's wider notion of effect (fx/passes/purity.h):
//
//   // forward(x): a = x + 1 (unused); x.add_(1); torch.rand(3) (unused); return x * 2
//   bool changed = fx::passes::eliminate_dead_code(*gm);  // removes only `a`
//
// torch.fx 1.13 would also remove `x.add_(1)` and `torch.rand(3)`, which
// changes the result and the random stream; fxcpp keeps every node for
// which fx::passes::is_impure holds. Graph::eliminate_dead_code stays
// torch.fx 1.13's rule.
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
// The same on gm.graph(), then gm.recompile() if anything changed.
bool eliminate_dead_code(GraphModule& gm);

}  // namespace fx::passes
