#pragma once
// Every use of a node rewritten to an Argument: another node, as
// Node::replace_all_uses_with does, or a constant or a tuple of nodes, which
// torch.fx's replace_all_uses_with also takes when a pass inlines a value
// (const folding's inlined submodule, a removed dropout of a constant).
// Private to src/passes.
#include <fx/graph.h>

namespace fx::passes::detail {

inline void replace_uses(Node* old, const Argument& replacement) {
  if (Node* n = replacement.node()) {
    old->replace_all_uses_with(n);
    return;
  }
  auto swap = [&](Node* used) -> Argument { return used == old ? replacement : Argument(used); };
  for (Node* user : old->users().to_vector()) {
    auto [args, kwargs] = map_args(*user, swap);
    user->set_args(std::move(args));
    user->set_kwargs(std::move(kwargs));
  }
}

}  // namespace fx::passes::detail
