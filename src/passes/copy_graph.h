#pragma once
// A whole copy of a graph (Python's copy.deepcopy(graph)): same nodes, names,
// output and its type annotation, and pytree info. Private to src/passes.
#include <fx/graph.h>

#include <memory>
#include <unordered_map>

namespace fx::passes::detail {

inline std::unique_ptr<Graph> copy_graph(const Graph& src) {
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> val_map;
  val_map.reserve(src.size());
  const Node* out = nullptr;
  Argument result = g->graph_copy(src, val_map, &out);
  if (out) g->output(result, out->type());
  g->set_pytree_info(src.pytree_info());
  return g;
}

}  // namespace fx::passes::detail
