// The records of normalization.h's classes (torch/nn/modules/batchnorm.py,
// instancenorm.py and normalization.py). torch 2.x's `bias` flag of each is
// accepted as spec_require_bias says.
#include <fx/nn/normalization.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_bool;
using detail::py_float;

namespace {

// at::batch_norm with the module's flags: running statistics are read in
// eval mode and updated in training mode.
CppCall emit_batch_norm(CppModuleCall& w, const BatchNormNd& bn) {
  std::string x = w.input();
  const bool use_batch_stats = bn.is_training() || !bn.running_mean.defined();
  const bool update_stats = bn.is_training() && bn.track_running_stats && bn.running_mean.defined();
  if (update_stats) {
    if (!bn.momentum) w.fail("is a BatchNorm in training mode with momentum=None (a cumulative average)");
    w.line(w.weight("num_batches_tracked") + ".add_(1);");
  }
  const bool pass_stats = !bn.is_training() || bn.track_running_stats;
  std::string weight = w.weight_or_none(bn.weight, "weight"), bias = w.weight_or_none(bn.bias, "bias");
  std::string mean = pass_stats ? w.weight_or_none(bn.running_mean, "running_mean") : "{}";
  std::string var = pass_stats ? w.weight_or_none(bn.running_var, "running_var") : "{}";
  return cpp_tensor("at::batch_norm(" + x + ", " + weight + ", " + bias + ", " + mean + ", " + var + ", " +
                    CppModuleCall::boolean(use_batch_stats) + ", " + w.real(bn.momentum.value_or(0.0)) +
                    ", " + w.real(bn.eps) + ", /*cudnn_enabled=*/true)");
}

// BatchNorm1d/2d/3d and InstanceNorm2d: the same parameters, different
// defaults. torch 2.x adds a keyword-only `bias` after device and dtype; the
// module holds no bias without affine, so it reads back as False then.
template <class M>
ModuleTraits norm(const char* type, const char* file, bool affine, bool track_running_stats) {
  TraitsOf<M> t{.type = type,
                .torch_typename = torch_modules(file, type),
                .params = {"num_features",
                           {"eps", 1e-05},
                           {"momentum", 0.1},
                           {"affine", affine},
                           {"track_running_stats", track_running_stats},
                           {"bias", true}},
                .describe =
                    [](const M& m) {
                      return Args{m.num_features,        m.eps,           spec_optional(m.momentum), m.affine,
                                  m.track_running_stats, m.bias.defined()};
                    },
                .make =
                    [type = std::string(type)](const SpecArgs& a) {
                      spec_require_bias(a, type, a.boolean("affine"));
                      return std::make_shared<M>(a.integer("num_features"), a.real("eps"),
                                                 a.optional_real("momentum"), a.boolean("affine"),
                                                 a.boolean("track_running_stats"));
                    },
                .constants =
                    [](const M& m) {
                      return ModuleConstants{{"track_running_stats", py_bool(m.track_running_stats)},
                                             {"momentum", detail::py_optional(m.momentum)},
                                             {"eps", py_float(m.eps)},
                                             {"num_features", py_int(m.num_features)},
                                             {"affine", py_bool(m.affine)}};
                    }};
  if constexpr (std::is_base_of_v<BatchNormNd, M>)
    t.emit_cpp = [](CppModuleCall& w, const M& m) { return emit_batch_norm(w, m); };
  return t;  // moved: the conversion takes an rvalue
}

}  // namespace

std::vector<ModuleTraits> normalization_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(norm<BatchNorm1d>("torch.nn.BatchNorm1d", "batchnorm", true, true));
  out.push_back(norm<BatchNorm2d>("torch.nn.BatchNorm2d", "batchnorm", true, true));
  out.push_back(norm<BatchNorm3d>("torch.nn.BatchNorm3d", "batchnorm", true, true));
  out.push_back(norm<InstanceNorm2d>("torch.nn.InstanceNorm2d", "instancenorm", false, false));
  out.push_back(TraitsOf<LayerNorm>{
      .type = "torch.nn.LayerNorm",
      .torch_typename = torch_modules("normalization", "LayerNorm"),
      .params = {"normalized_shape", {"eps", 1e-05}, {"elementwise_affine", true}, {"bias", true}},
      .describe =
          [](const LayerNorm& m) {
            return Args{spec_tuple(m.normalized_shape), m.eps, m.elementwise_affine, m.bias.defined()};
          },
      .make =
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.LayerNorm", a.boolean("elementwise_affine"));
            return std::make_shared<LayerNorm>(a.integers("normalized_shape"), a.real("eps"),
                                               a.boolean("elementwise_affine"));
          },
      .constants =
          [](const LayerNorm& m) {
            return ModuleConstants{{"normalized_shape", detail::py_tuple(m.normalized_shape)},
                                   {"eps", py_float(m.eps)},
                                   {"elementwise_affine", py_bool(m.elementwise_affine)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const LayerNorm& m) {
            std::string x = w.input(), weight = w.weight_or_none(m.weight, "weight");
            std::string bias = w.weight_or_none(m.bias, "bias");
            return cpp_tensor("at::layer_norm(" + x + ", " + w.ints(m.normalized_shape) + ", " + weight +
                              ", " + bias + ", " + w.real(m.eps) + ")");
          }});
  out.push_back(TraitsOf<GroupNorm>{
      .type = "torch.nn.GroupNorm",
      .torch_typename = torch_modules("normalization", "GroupNorm"),
      .params = {"num_groups", "num_channels", {"eps", 1e-05}, {"affine", true}, {"bias", true}},
      .describe =
          [](const GroupNorm& m) {
            return Args{m.num_groups, m.num_channels, m.eps, m.affine, m.bias.defined()};
          },
      .make =
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.GroupNorm", a.boolean("affine"));
            return std::make_shared<GroupNorm>(a.integer("num_groups"), a.integer("num_channels"),
                                               a.real("eps"), a.boolean("affine"));
          },
      .constants =
          [](const GroupNorm& m) {
            return ModuleConstants{{"num_groups", py_int(m.num_groups)},
                                   {"num_channels", py_int(m.num_channels)},
                                   {"eps", py_float(m.eps)},
                                   {"affine", py_bool(m.affine)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const GroupNorm& m) {
            std::string x = w.input(), weight = w.weight_or_none(m.weight, "weight");
            std::string bias = w.weight_or_none(m.bias, "bias");
            return cpp_tensor("at::group_norm(" + x + ", " + std::to_string(m.num_groups) + ", " + weight +
                              ", " + bias + ", " + w.real(m.eps) + ")");
          }});
  return out;
}

}  // namespace fx::nn
