// The table of named passes. It is an explicit list, not self-registration
// from each pass's file: fxcpp is a static library, and the linker drops
// object files that nothing references, registrars included.
#include <fx/error.h>
#include <fx/graph_module.h>
#include <fx/passes/const_fold.h>
#include <fx/passes/cse.h>
#include <fx/passes/dead_code_elimination.h>
#include <fx/passes/fuse.h>
#include <fx/passes/normalize_args.h>
#include <fx/passes/pass_registry.h>
#include <fx/passes/remove_dropout.h>
#include <fx/passes/shape_prop.h>

#include "copy_graph.h"

namespace fx::passes {

const std::vector<Pass>& registered_passes() {
  static const std::vector<Pass> passes = {
      {"dce", "dead code elimination: erase unused nodes that are pure (not in-place, random or effect-only)",
       [](GraphModule& gm, const PassContext&) { return eliminate_dead_code(gm); }},
      {"cse", "common subexpression elimination: merge identical pure computations",
       [](GraphModule& gm, const PassContext&) { return cse(gm); }},
      {"fuse", "fold eval-mode BatchNorm into the Conv1d/2d/3d or Linear before it",
       [](GraphModule& gm, const PassContext&) { return fuse(gm); }},
      {"fold", "constant folding: compute once what depends only on parameters and constants",
       [](GraphModule& gm, const PassContext&) { return fold_constants(gm); }},
      {"normalize_args", "write every call's arguments as keywords, defaults filled in, from its signature",
       [](GraphModule& gm, const PassContext&) {
         std::unique_ptr<GraphModule> normalized = NormalizeArgs(gm).transform();
         if (normalized->code() == gm.code()) return false;
         gm.set_graph(detail::copy_graph(normalized->graph()));
         return true;
       }},
      {"remove_dropout", "remove Dropout modules and dropout calls (eval-mode no-ops)",
       [](GraphModule& gm, const PassContext&) { return remove_dropout(gm); }},
      {"shape_prop", "run the example inputs and record each node's tensor_meta (shape, dtype, stride, ...)",
       [](GraphModule& gm, const PassContext& context) {
         if (context.example_inputs.empty())
           throw Error(
               "pass 'shape_prop' runs the module and needs example inputs (PassManager::example_inputs)");
         std::vector<Value> inputs(context.example_inputs.begin(), context.example_inputs.end());
         ShapeProp(gm).propagate(std::move(inputs));
         return false;  // meta only: the graph is unchanged
       }},
  };
  return passes;
}

const Pass& find_pass(std::string_view name) {
  std::string known;
  for (const Pass& p : registered_passes()) {
    if (p.name == name) return p;
    known += known.empty() ? "" : ", ";
    known += p.name;
  }
  throw Error("no pass named '" + std::string(name) + "'; the registered passes are: " + known);
}

}  // namespace fx::passes
