#pragma once
// fx::passes::split_module: cut a GraphModule into submodules, one per
// partition, and a base module that calls them in order (torch.fx's
// torch/fx/passes/split_module.py, 2.14).
//
//   // three partitions, chosen by a node's position
//   int64_t i = 0;
//   auto split = fx::passes::split_module(*gm, *model, [&](fx::Node*) { return i++ % 3; });
//   split->code();                          // calls self.submod_0(...), self.submod_1(...), ...
//   split->get_submodule("submod_1");       // a GraphModule holding that partition's nodes
//
// The callback sees every call_function / call_method / call_module node, in
// graph order, and names its partition. What it builds, as torch.fx 2.14 does:
// - a partition per distinct id, `submod_<id>`, ordered topologically by
//   the values they exchange (a stack: FX's order, not simply by id);
// - a partition's placeholders are the values it reads from elsewhere
//   (graph inputs, get_attr values, other partitions' results), named as the
//   original nodes; its output is every value read outside it, a tuple when
//   there are several, unpacked in the base module with `getitem`;
// - placeholders and get_attr nodes stay in the base module (with their
//   types and defaults) and are passed to the partitions that use them; a
//   call_module target `a.b` becomes the partition's own submodule `a_b`
//   (shared, not copied);
// - keep_original_order: the base module calls the partitions in the order
//   of their first node instead of the topological order;
// - a partition none of whose values is read elsewhere returns `()` and is
//   not unpacked (torch.fx 2.x; 1.13 failed with IndexError).
// `root_m` is not used (as in FX: it is there for the caller's symmetry).
// qualname_map, when given, receives `submod_<id>.<new name>` -> original
// call_module target.
//
// Errors (fx::Error, naming the node): a callback that throws; partitions
// whose dependencies form a cycle; keep_original_order with a partition
// that reads a value of a partition coming after it; a call_module or
// get_attr target the module lacks.
//
// Linear in the size of the graph.

#include <fx/graph_module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace fx::passes {

using SplitCallback = std::function<int64_t(Node*)>;

std::unique_ptr<GraphModule> split_module(GraphModule& m, Module& root_m, const SplitCallback& split_callback,
                                          std::map<std::string, std::string>* qualname_map = nullptr,
                                          bool keep_original_order = false);

}  // namespace fx::passes
