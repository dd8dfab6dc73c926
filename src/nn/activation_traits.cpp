// The records of activation.h's classes (torch/nn/modules/activation.py).
#include <fx/nn/activation.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_bool;
using detail::py_float;

namespace {

// ReLU and its kin: inplace=False only; `aten` is the ATen function of the forward.
template <class M>
ModuleTraits inplace_only(const char* type, const char* aten) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("activation", type),
                     .params = {{"inplace", false}},
                     .describe = [](const M& m) { return Args{m.inplace}; },
                     .make = [](const SpecArgs& a) { return std::make_shared<M>(a.boolean("inplace")); },
                     .constants =
                         [](const M& m) {
                           return ModuleConstants{{"inplace", py_bool(m.inplace)}};
                         },
                     .emit_cpp =
                         [aten = std::string(aten)](CppModuleCall& w, const M& m) {
                           return cpp_tensor("at::" + in_place(m.inplace, aten) + "(" + w.input() + ")");
                         }};
}

// Sigmoid and Tanh: no arguments, no __constants__.
template <class M>
ModuleTraits no_arguments(const char* type, const char* aten) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("activation", type),
                     .params = {},
                     .describe = [](const M&) { return Args{}; },
                     .make = [](const SpecArgs&) { return std::make_shared<M>(); },
                     .emit_cpp = [aten = std::string(aten)](
                                     CppModuleCall& w,
                                     const M&) { return cpp_tensor("at::" + aten + "(" + w.input() + ")"); }};
}

template <class M>
ModuleTraits softmax(const char* type, const char* aten) {
  return TraitsOf<M>{
      .type = type,
      .torch_typename = torch_modules("activation", type),
      .params = {{"dim", None}},
      .describe = [](const M& m) { return Args{spec_optional(m.dim)}; },
      .make = [](const SpecArgs& a) { return std::make_shared<M>(a.optional_integer("dim")); },
      .constants =
          [](const M& m) {
            return ModuleConstants{{"dim", detail::py_optional(m.dim)}};
          },
      .emit_cpp =
          [aten = std::string(aten), type = std::string(type)](CppModuleCall& w, const M& m) {
            if (!m.dim)
              w.fail("is a " + type.substr(9) + " without dim (PyTorch's legacy choice); give it a dim");
            return cpp_tensor("at::" + aten + "(" + w.input() + ", " + std::to_string(*m.dim) + ")");
          }};
}

}  // namespace

std::vector<ModuleTraits> activation_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(inplace_only<ReLU>("torch.nn.ReLU", "relu"));
  out.push_back(
      TraitsOf<ReLU6>{.type = "torch.nn.ReLU6",
                      .torch_typename = torch_modules("activation", "ReLU6"),
                      .params = {{"inplace", false}},
                      .describe = [](const ReLU6& m) { return Args{m.inplace}; },
                      .make = [](const SpecArgs& a) { return std::make_shared<ReLU6>(a.boolean("inplace")); },
                      .constants =
                          [](const ReLU6& m) {
                            return ModuleConstants{{"min_val", py_float(m.min_val)},
                                                   {"max_val", py_float(m.max_val)},
                                                   {"inplace", py_bool(m.inplace)}};
                          },
                      .emit_cpp =
                          [](CppModuleCall& w, const ReLU6& m) {
                            return cpp_tensor("at::" + in_place(m.inplace, "hardtanh") + "(" + w.input() +
                                              ", " + w.real(m.min_val) + ", " + w.real(m.max_val) + ")");
                          }});
  out.push_back(TraitsOf<LeakyReLU>{
      .type = "torch.nn.LeakyReLU",
      .torch_typename = torch_modules("activation", "LeakyReLU"),
      .params = {{"negative_slope", 0.01}, {"inplace", false}},
      .describe =
          [](const LeakyReLU& m) {
            return Args{m.negative_slope, m.inplace};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<LeakyReLU>(a.real("negative_slope"), a.boolean("inplace"));
          },
      .constants =
          [](const LeakyReLU& m) {
            return ModuleConstants{{"inplace", py_bool(m.inplace)},
                                   {"negative_slope", py_float(m.negative_slope)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const LeakyReLU& m) {
            return cpp_tensor("at::" + in_place(m.inplace, "leaky_relu") + "(" + w.input() + ", " +
                              w.real(m.negative_slope) + ")");
          }});
  out.push_back(
      TraitsOf<GELU>{.type = "torch.nn.GELU",
                     .torch_typename = torch_modules("activation", "GELU"),
                     .params = {{"approximate", "none"}},
                     .describe = [](const GELU& m) { return Args{m.approximate}; },
                     .make = [](const SpecArgs& a) { return std::make_shared<GELU>(a.str("approximate")); },
                     .constants =
                         [](const GELU& m) {
                           return ModuleConstants{{"approximate", m.approximate}};
                         },
                     .emit_cpp =
                         [](CppModuleCall& w, const GELU& m) {
                           return cpp_tensor("at::gelu(" + w.input() + ", " + w.str(m.approximate) + ")");
                         }});
  out.push_back(inplace_only<SiLU>("torch.nn.SiLU", "silu"));
  out.push_back(inplace_only<Mish>("torch.nn.Mish", "mish"));
  out.push_back(inplace_only<Hardswish>("torch.nn.Hardswish", "hardswish"));
  out.push_back(inplace_only<Hardsigmoid>("torch.nn.Hardsigmoid", "hardsigmoid"));
  out.push_back(no_arguments<Sigmoid>("torch.nn.Sigmoid", "sigmoid"));
  out.push_back(no_arguments<Tanh>("torch.nn.Tanh", "tanh"));
  out.push_back(softmax<Softmax>("torch.nn.Softmax", "softmax"));
  out.push_back(softmax<LogSoftmax>("torch.nn.LogSoftmax", "log_softmax"));
  return out;
}

}  // namespace fx::nn
