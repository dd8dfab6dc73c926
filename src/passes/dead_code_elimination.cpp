#include <fx/passes/dead_code_elimination.h>

#include "branch_modules.h"

namespace fx::passes {

bool eliminate_dead_code(Graph& graph) {
  // torch.fx lints first to be sure the graph is topologically sorted; an
  // fxcpp Graph is at every edit (Node::set_args and friends refuse a use
  // before its definition), so the walk needs no lint (a lint costs about
  // as much as the pass).
  bool changed = false;
  // Reversed, so that erasing a node has already dropped it from the user
  // counts of its inputs when they are visited.
  for (Node* n : graph.nodes().reversed()) {
    if (n->num_users() == 0 && !n->is_impure()) {
      graph.erase_node(n);
      changed = true;
    }
  }
  return changed;
}

bool eliminate_dead_code(GraphModule& gm) {
  bool changed = false;
  for (GraphModule* branch : detail::branch_modules(gm)) changed = eliminate_dead_code(*branch) || changed;
  changed = eliminate_dead_code(gm.graph()) || changed;
  if (changed) gm.recompile();
  return changed;
}

}  // namespace fx::passes
