// The records of conv.h's classes (torch/nn/modules/conv.py).
#include <fx/nn/conv.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_tuple;

namespace {

ModuleConstants conv_constants(const ConvNd& c) {
  return {{"stride", py_tuple(c.stride)},          {"padding", py_tuple(c.padding)},
          {"dilation", py_tuple(c.dilation)},      {"groups", py_int(c.groups)},
          {"padding_mode", c.padding_mode},        {"output_padding", py_tuple(c.output_padding)},
          {"in_channels", py_int(c.in_channels)},  {"out_channels", py_int(c.out_channels)},
          {"kernel_size", py_tuple(c.kernel_size)}};
}

// at::convNd / at::conv_transposeNd; weights are looked up one statement at a
// time, in the order the generated class declares its members.
CppCall emit_conv(CppModuleCall& w, const ConvNd& c, bool transposed) {
  if (c.padding_mode != "zeros")
    w.fail("pads with mode '" + c.padding_mode + "'; export_cpp supports 'zeros'");
  std::string x = w.input(), weight = w.weight("weight");
  std::string b = w.weight_or_none(c.bias, "bias");
  std::string dims = std::to_string(c.kernel_size.size());
  if (transposed)
    return cpp_tensor("at::conv_transpose" + dims + "d(" + x + ", " + weight + ", " + b + ", " +
                      w.ints(c.stride) + ", " + w.ints(c.padding) + ", " + w.ints(c.output_padding) + ", " +
                      std::to_string(c.groups) + ", " + w.ints(c.dilation) + ")");
  return cpp_tensor("at::conv" + dims + "d(" + x + ", " + weight + ", " + b + ", " + w.ints(c.stride) + ", " +
                    w.ints(c.padding) + ", " + w.ints(c.dilation) + ", " + std::to_string(c.groups) + ")");
}

template <class M>
ModuleTraits conv(const char* type) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("conv", type),
                     .params = {"in_channels",
                                "out_channels",
                                "kernel_size",
                                {"stride", 1},
                                {"padding", 0},
                                {"dilation", 1},
                                {"groups", 1},
                                {"bias", true},
                                {"padding_mode", "zeros"}},
                     .describe =
                         [](const M& m) {
                           return Args{m.in_channels,
                                       m.out_channels,
                                       spec_tuple(m.kernel_size),
                                       spec_tuple(m.stride),
                                       spec_tuple(m.padding),
                                       spec_tuple(m.dilation),
                                       m.groups,
                                       m.bias.defined(),
                                       m.padding_mode};
                         },
                     .make =
                         [](const SpecArgs& a) {
                           return std::make_shared<M>(
                               a.integer("in_channels"), a.integer("out_channels"), a.integers("kernel_size"),
                               a.integers("stride"), a.integers("padding"), a.integers("dilation"),
                               a.integer("groups"), a.boolean("bias"), a.str("padding_mode"));
                         },
                     .constants = [](const M& m) { return conv_constants(m); },
                     .emit_cpp = [](CppModuleCall& w, const M& m) { return emit_conv(w, m, false); }};
}

template <class M>
ModuleTraits conv_transpose(const char* type) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("conv", type),
                     .params = {"in_channels",
                                "out_channels",
                                "kernel_size",
                                {"stride", 1},
                                {"padding", 0},
                                {"output_padding", 0},
                                {"groups", 1},
                                {"bias", true},
                                {"dilation", 1},
                                {"padding_mode", "zeros"}},
                     .describe =
                         [](const M& m) {
                           return Args{m.in_channels,
                                       m.out_channels,
                                       spec_tuple(m.kernel_size),
                                       spec_tuple(m.stride),
                                       spec_tuple(m.padding),
                                       spec_tuple(m.output_padding),
                                       m.groups,
                                       m.bias.defined(),
                                       spec_tuple(m.dilation),
                                       m.padding_mode};
                         },
                     .make =
                         [](const SpecArgs& a) {
                           return std::make_shared<M>(a.integer("in_channels"), a.integer("out_channels"),
                                                      a.integers("kernel_size"), a.integers("stride"),
                                                      a.integers("padding"), a.integers("output_padding"),
                                                      a.integer("groups"), a.boolean("bias"),
                                                      a.integers("dilation"), a.str("padding_mode"));
                         },
                     .constants = [](const M& m) { return conv_constants(m); },
                     .emit_cpp = [](CppModuleCall& w, const M& m) { return emit_conv(w, m, true); }};
}

}  // namespace

std::vector<ModuleTraits> conv_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(conv<Conv1d>("torch.nn.Conv1d"));
  out.push_back(conv<Conv2d>("torch.nn.Conv2d"));
  out.push_back(conv<Conv3d>("torch.nn.Conv3d"));
  out.push_back(conv_transpose<ConvTranspose1d>("torch.nn.ConvTranspose1d"));
  out.push_back(conv_transpose<ConvTranspose2d>("torch.nn.ConvTranspose2d"));
  return out;
}

}  // namespace fx::nn
