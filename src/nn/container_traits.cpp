// The records of the containers: Python's plain torch.nn.Module, Sequential,
// ModuleList and ModuleDict. Their children are described apart, so they have
// no arguments; they are traced through, so export_cpp never calls them.
#include <fx/error.h>
#include <fx/nn/container.h>

#include "builtin_traits.h"

namespace fx::nn {

namespace {

// Python's plain torch.nn.Module(), as GraphModule holds the levels of a dotted path.
class PlainModule final : public Module {
 public:
  PlainModule() : Module("torch.nn.Module", {}) {}
  Value forward(const std::vector<Value>&) override { throw Error("torch.nn.Module() has no forward"); }
};

template <class M>
ModuleTraits container(const char* type, const char* file) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules(file, type),
                     .params = {},
                     .describe = [](const M&) { return Args{}; },
                     .make = [](const SpecArgs&) { return std::make_shared<M>(); }};
}

}  // namespace

std::vector<ModuleTraits> container_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(
      TraitsOf<Module>{.type = "torch.nn.Module",
                       .torch_typename = "torch.nn.Module",
                       .params = {},
                       .describe =
                           [](const Module& m) {
                             // A class of the user's that calls itself torch.nn.Module would lose its
                             // tensors.
                             if (!m.named_parameters(false).is_empty() ||
                                 !m.named_buffers(false).is_empty() || !m.attributes().empty())
                               throw Error(
                                   "module_spec: a torch.nn.Module with tensors of its own is not a plain "
                                   "container; give its class its own type name");
                             return Args{};
                           },
                       .make = [](const SpecArgs&) { return std::make_shared<PlainModule>(); }});
  out.push_back(container<Sequential>("torch.nn.Sequential", "container"));
  out.push_back(container<ModuleList>("torch.nn.ModuleList", "container"));
  out.push_back(container<ModuleDict>("torch.nn.ModuleDict", "container"));
  return out;
}

}  // namespace fx::nn
