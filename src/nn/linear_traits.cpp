// The records of linear.h's classes (torch/nn/modules/linear.py).
#include <fx/nn/linear.h>

#include "builtin_traits.h"

namespace fx::nn {

namespace {

// Linear and NonDynamicallyQuantizableLinear (MultiheadAttention's out_proj).
template <class M>
ModuleTraits linear(const char* type, std::string torch_typename) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = std::move(torch_typename),
                     .params = {"in_features", "out_features", {"bias", true}},
                     .describe =
                         [](const M& m) {
                           return Args{m.in_features, m.out_features, m.bias.defined()};
                         },
                     .make =
                         [](const SpecArgs& a) {
                           return std::make_shared<M>(a.integer("in_features"), a.integer("out_features"),
                                                      a.boolean("bias"));
                         },
                     .constants =
                         [](const M& m) {
                           return ModuleConstants{{"in_features", py_int(m.in_features)},
                                                  {"out_features", py_int(m.out_features)}};
                         },
                     .emit_cpp =
                         [](CppModuleCall& w, const M& m) {
                           std::string x = w.input(), weight = w.weight("weight");
                           return cpp_tensor("at::linear(" + x + ", " + weight +
                                             (m.bias.defined() ? ", " + w.weight("bias") : "") + ")");
                         }};
}

}  // namespace

std::vector<ModuleTraits> linear_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(TraitsOf<Identity>{
      .type = "torch.nn.Identity",
      .torch_typename = torch_modules("linear", "Identity"),
      .params = {},
      .describe = [](const Identity&) { return Args{}; },
      .make = [](const SpecArgs&) { return std::make_shared<Identity>(); },
      .emit_cpp = [](CppModuleCall& w, const Identity&) { return cpp_tensor(w.input()); }});
  out.push_back(linear<Linear>("torch.nn.Linear", torch_modules("linear", "Linear")));
  out.push_back(
      linear<NonDynamicallyQuantizableLinear>("torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
                                              "torch.nn.modules.linear.NonDynamicallyQuantizableLinear"));
  out.push_back(TraitsOf<Bilinear>{
      .type = "torch.nn.Bilinear",
      .torch_typename = torch_modules("linear", "Bilinear"),
      .params = {"in1_features", "in2_features", "out_features", {"bias", true}},
      .describe =
          [](const Bilinear& m) {
            return Args{m.in1_features, m.in2_features, m.out_features, m.bias.defined()};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<Bilinear>(a.integer("in1_features"), a.integer("in2_features"),
                                              a.integer("out_features"), a.boolean("bias"));
          },
      .constants =
          [](const Bilinear& m) {
            return ModuleConstants{{"in1_features", py_int(m.in1_features)},
                                   {"in2_features", py_int(m.in2_features)},
                                   {"out_features", py_int(m.out_features)}};
          }});
  return out;
}

}  // namespace fx::nn
