// The table of named passes. It is an explicit list, not self-registration
// from each pass's file: fxcpp is a static library, and the linker drops
// object files that nothing references, registrars included.
#include <fx/error.h>
#include <fx/graph_module.h>
#include <fx/passes/pass_registry.h>

namespace fx::passes {

const std::vector<Pass>& registered_passes() {
  static const std::vector<Pass> passes = {
      {"dce", "eliminate_dead_code: erase pure nodes whose value is unused",
       [](GraphModule& gm, const PassContext&) { return gm.graph().eliminate_dead_code(); }},
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
