// The records of pooling.h's classes (torch/nn/modules/pooling.py). Sizes
// are saved as given, an int or a tuple; a stride of None is stored as
// kernel_size.
#include <fx/nn/pooling.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_bool;

namespace {

// An int or a tuple of ints and Nones, as the module was given it.
Argument spec_pool(const PoolArg& p) {
  auto item = [](const std::optional<int64_t>& i) { return spec_optional(i); };
  if (p.is_int()) return item(p.items()[0]);
  Tuple t;
  for (const auto& i : p.items()) t.items.push_back(item(i));
  return t;
}

// A pooling argument for ATen: an int list of `dims` items; None entries of
// an adaptive output size keep the input's size there.
std::string cpp_pool(CppModuleCall& w, const PoolArg& a, const std::string& x, size_t dims) {
  std::vector<std::string> items;
  const auto& v = a.items();
  for (size_t i = 0; i < (a.is_int() ? dims : v.size()); ++i) {
    const auto& item = a.is_int() ? v[0] : v[i];
    items.push_back(item ? std::to_string(*item)
                         : x + ".size(" +
                               std::to_string(static_cast<int64_t>(i) - static_cast<int64_t>(dims)) + ")");
  }
  return w.int_list(items);
}

template <class M>
ModuleTraits max_pool(const char* type, size_t dims) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("pooling", type),
                     .params = {"kernel_size",
                                {"stride", None},
                                {"padding", 0},
                                {"dilation", 1},
                                {"return_indices", false},
                                {"ceil_mode", false}},
                     .describe =
                         [](const M& m) {
                           return Args{spec_pool(m.kernel_size), spec_pool(m.stride), spec_pool(m.padding),
                                       spec_pool(m.dilation),    m.return_indices,    m.ceil_mode};
                         },
                     .make =
                         [](const SpecArgs& a) {
                           return std::make_shared<M>(a.pool("kernel_size"), a.optional_pool("stride"),
                                                      a.pool("padding"), a.pool("dilation"),
                                                      a.boolean("return_indices"), a.boolean("ceil_mode"));
                         },
                     .constants =
                         [](const M& m) {
                           return ModuleConstants{{"kernel_size", m.kernel_size.str()},
                                                  {"stride", m.stride.str()},
                                                  {"padding", m.padding.str()},
                                                  {"dilation", m.dilation.str()},
                                                  {"return_indices", py_bool(m.return_indices)},
                                                  {"ceil_mode", py_bool(m.ceil_mode)}};
                         },
                     .emit_cpp =
                         [dims](CppModuleCall& w, const M& m) {
                           if (m.return_indices)
                             w.fail("returns indices; export_cpp supports return_indices=False");
                           std::string x = w.input();
                           return cpp_tensor("at::max_pool" + std::to_string(dims) + "d(" + x + ", " +
                                             cpp_pool(w, m.kernel_size, x, dims) + ", " +
                                             cpp_pool(w, m.stride, x, dims) + ", " +
                                             cpp_pool(w, m.padding, x, dims) + ", " +
                                             cpp_pool(w, m.dilation, x, dims) + ", " +
                                             CppModuleCall::boolean(m.ceil_mode) + ")");
                         }};
}

template <class M>
ModuleTraits adaptive_avg_pool(const char* type, size_t dims) {
  return TraitsOf<M>{.type = type,
                     .torch_typename = torch_modules("pooling", type),
                     .params = {"output_size"},
                     .describe = [](const M& m) { return Args{spec_pool(m.output_size)}; },
                     .make = [](const SpecArgs& a) { return std::make_shared<M>(a.pool("output_size")); },
                     .constants =
                         [](const M& m) {
                           return ModuleConstants{{"output_size", m.output_size.str()}};
                         },
                     .emit_cpp =
                         [dims](CppModuleCall& w, const M& m) {
                           std::string x = w.input();
                           return cpp_tensor("at::adaptive_avg_pool" + std::to_string(dims) + "d(" + x +
                                             ", " + cpp_pool(w, m.output_size, x, dims) + ")");
                         }};
}

}  // namespace

std::vector<ModuleTraits> pooling_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(max_pool<MaxPool1d>("torch.nn.MaxPool1d", 1));
  out.push_back(max_pool<MaxPool2d>("torch.nn.MaxPool2d", 2));
  out.push_back(TraitsOf<AvgPool2d>{
      .type = "torch.nn.AvgPool2d",
      .torch_typename = torch_modules("pooling", "AvgPool2d"),
      .params = {"kernel_size",
                 {"stride", None},
                 {"padding", 0},
                 {"ceil_mode", false},
                 {"count_include_pad", true},
                 {"divisor_override", None}},
      .describe =
          [](const AvgPool2d& m) {
            return Args{spec_pool(m.kernel_size), spec_pool(m.stride),
                        spec_pool(m.padding),     m.ceil_mode,
                        m.count_include_pad,      spec_optional(m.divisor_override)};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<AvgPool2d>(
                a.pool("kernel_size"), a.optional_pool("stride"), a.pool("padding"), a.boolean("ceil_mode"),
                a.boolean("count_include_pad"), a.optional_integer("divisor_override"));
          },
      .constants =
          [](const AvgPool2d& m) {
            return ModuleConstants{{"kernel_size", m.kernel_size.str()},
                                   {"stride", m.stride.str()},
                                   {"padding", m.padding.str()},
                                   {"ceil_mode", py_bool(m.ceil_mode)},
                                   {"count_include_pad", py_bool(m.count_include_pad)},
                                   {"divisor_override", detail::py_optional(m.divisor_override)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const AvgPool2d& m) {
            std::string x = w.input();
            return cpp_tensor(
                "at::avg_pool2d(" + x + ", " + cpp_pool(w, m.kernel_size, x, 2) + ", " +
                cpp_pool(w, m.stride, x, 2) + ", " + cpp_pool(w, m.padding, x, 2) + ", " +
                CppModuleCall::boolean(m.ceil_mode) + ", " + CppModuleCall::boolean(m.count_include_pad) +
                ", " + (m.divisor_override ? std::to_string(*m.divisor_override) : "c10::nullopt") + ")");
          }});
  out.push_back(adaptive_avg_pool<AdaptiveAvgPool1d>("torch.nn.AdaptiveAvgPool1d", 1));
  out.push_back(adaptive_avg_pool<AdaptiveAvgPool2d>("torch.nn.AdaptiveAvgPool2d", 2));
  return out;
}

}  // namespace fx::nn
