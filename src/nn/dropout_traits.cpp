// The records of dropout.h's classes (torch/nn/modules/dropout.py).
#include <fx/nn/dropout.h>

#include "builtin_traits.h"

namespace fx::nn {

namespace {

// `aten`: ATen's function; Dropout2d drops whole channels, feature_dropout.
template <class M>
ModuleTraits dropout(const char* type, const char* aten) {
  return TraitsOf<M>{
      .type = type,
      .torch_typename = torch_modules("dropout", type),
      .params = {{"p", 0.5}, {"inplace", false}},
      .describe =
          [](const M& m) {
            return Args{m.p, m.inplace};
          },
      .make = [](const SpecArgs& a) { return std::make_shared<M>(a.real("p"), a.boolean("inplace")); },
      .constants =
          [](const M& m) {
            return ModuleConstants{{"p", detail::py_float(m.p)}, {"inplace", detail::py_bool(m.inplace)}};
          },
      .emit_cpp =
          [aten = std::string(aten)](CppModuleCall& w, const M& m) {
            return cpp_tensor("at::" + in_place(m.inplace, aten) + "(" + w.input() + ", " + w.real(m.p) +
                              ", /*train=*/" + CppModuleCall::boolean(m.is_training()) + ")");
          }};
}

}  // namespace

std::vector<ModuleTraits> dropout_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(dropout<Dropout>("torch.nn.Dropout", "dropout"));
  out.push_back(dropout<Dropout2d>("torch.nn.Dropout2d", "feature_dropout"));
  return out;
}

}  // namespace fx::nn
