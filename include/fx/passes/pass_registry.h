#pragma once
// The passes known by name: what PassManager({"cse", "dce"}) and
// `fxc opt -p cse,dce` run. Each is a function that rewrites a GraphModule in
// place and says whether it changed anything (torch.fx's PassResult.modified).
#include <ATen/core/ivalue.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {
class GraphModule;
}

namespace fx::passes {

// What a pass may need besides the module: example inputs for the passes
// that run it (shape_prop). Empty when the caller has none.
struct PassContext {
  std::vector<c10::IValue> example_inputs;
};

struct Pass {
  std::string name;
  std::string description;  // one line, for `fxc opt --help`
  std::function<bool(GraphModule&, const PassContext&)> run;
};

// Every registered pass, in a fixed order.
const std::vector<Pass>& registered_passes();
// The pass of this name; throws fx::Error listing the known names.
const Pass& find_pass(std::string_view name);

}  // namespace fx::passes
