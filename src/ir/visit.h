#pragma once
// Walking the nodes inside arguments without std::function (hot paths).

#include <fx/argument.h>

namespace fx::detail {

// Visits the nodes of an argument without std::function overhead (hot path).
template <class F>
void visit_nodes(const Argument& a, F&& fn) {
  const auto& s = a.storage();
  if (const auto* n = std::get_if<Node*>(&s)) {
    fn(*n);
  } else if (const auto* t = std::get_if<Tuple>(&s)) {
    for (const auto& x : t->items) visit_nodes(x, fn);
  } else if (const auto* l = std::get_if<List>(&s)) {
    for (const auto& x : l->items) visit_nodes(x, fn);
  } else if (const auto* d = std::get_if<Dict>(&s)) {
    for (const auto& kv : d->items) visit_nodes(kv.second, fn);
  } else if (const auto* sl = std::get_if<Slice>(&s)) {
    for (const auto& x : sl->parts) visit_nodes(x, fn);
  }
}

template <class F>
void visit_nodes(const Args& args, const Kwargs& kwargs, F&& fn) {
  for (const auto& a : args) visit_nodes(a, fn);
  for (const auto& kv : kwargs) visit_nodes(kv.second, fn);
}

}  // namespace fx::detail
