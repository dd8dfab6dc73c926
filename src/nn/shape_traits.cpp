// The records of shape.h's classes (torch/nn/modules/flatten.py,
// upsampling.py and pixelshuffle.py).
#include <fx/nn/shape.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_float;
using detail::py_tuple;

namespace {

// Upsample's size and scale_factor: None, one value (Python's int or float), or a tuple.
template <class T>
Argument spec_one_or_tuple(const std::vector<T>& v) {
  if (v.empty()) return None;
  if (v.size() == 1) return v[0];
  return Tuple{std::vector<Argument>(v.begin(), v.end())};
}

ModuleConstants upsample_constants(const Upsample& u) {
  const auto& o = u.options;
  std::string size = o.size.empty() ? "None" : o.size.size() == 1 ? py_int(o.size[0]) : py_tuple(o.size);
  std::string scale = "None";
  if (o.scale_factor.size() == 1) {
    scale = py_float(o.scale_factor[0]);
  } else if (!o.scale_factor.empty()) {
    scale = "(";
    for (size_t i = 0; i < o.scale_factor.size(); ++i) scale += (i ? ", " : "") + py_float(o.scale_factor[i]);
    scale += ")";
  }
  return {{"size", size},       {"scale_factor", scale},
          {"mode", o.mode},     {"align_corners", detail::py_optional(o.align_corners)},
          {"name", "Upsample"}, {"recompute_scale_factor", detail::py_optional(o.recompute_scale_factor)}};
}

}  // namespace

std::vector<ModuleTraits> shape_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(TraitsOf<Flatten>{
      .type = "torch.nn.Flatten",
      .torch_typename = torch_modules("flatten", "Flatten"),
      .params = {{"start_dim", 1}, {"end_dim", -1}},
      .describe =
          [](const Flatten& m) {
            return Args{m.start_dim, m.end_dim};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<Flatten>(a.integer("start_dim"), a.integer("end_dim"));
          },
      .constants =
          [](const Flatten& m) {
            return ModuleConstants{{"start_dim", py_int(m.start_dim)}, {"end_dim", py_int(m.end_dim)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const Flatten& m) {
            return cpp_tensor(w.input() + ".flatten(" + std::to_string(m.start_dim) + ", " +
                              std::to_string(m.end_dim) + ")");
          }});
  out.push_back(TraitsOf<Unflatten>{
      .type = "torch.nn.Unflatten",
      .torch_typename = torch_modules("flatten", "Unflatten"),
      .params = {"dim", "unflattened_size"},
      .describe =
          [](const Unflatten& m) {
            return Args{m.dim, spec_tuple(m.unflattened_size)};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<Unflatten>(a.integer("dim"), a.integers("unflattened_size"));
          },
      .constants =
          [](const Unflatten& m) {
            return ModuleConstants{{"dim", py_int(m.dim)},
                                   {"unflattened_size", py_tuple(m.unflattened_size)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const Unflatten& m) {
            return cpp_tensor(w.input() + ".unflatten(" + std::to_string(m.dim) + ", " +
                              w.ints(m.unflattened_size) + ")");
          }});
  out.push_back(TraitsOf<Upsample>{
      .type = "torch.nn.Upsample",
      .torch_typename = torch_modules("upsampling", "Upsample"),
      .params = {{"size", None},
                 {"scale_factor", None},
                 {"mode", "nearest"},
                 {"align_corners", None},
                 {"recompute_scale_factor", None}},
      .describe =
          [](const Upsample& m) {
            const auto& o = m.options;
            return Args{spec_one_or_tuple(o.size), spec_one_or_tuple(o.scale_factor), o.mode,
                        spec_optional(o.align_corners), spec_optional(o.recompute_scale_factor)};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<Upsample>(Upsample::Options{
                a.integers_or_none("size"), a.reals_or_none("scale_factor"), a.str("mode"),
                a.optional_boolean("align_corners"), a.optional_boolean("recompute_scale_factor")});
          },
      .constants = upsample_constants});
  out.push_back(TraitsOf<PixelShuffle>{
      .type = "torch.nn.PixelShuffle",
      .torch_typename = torch_modules("pixelshuffle", "PixelShuffle"),
      .params = {"upscale_factor"},
      .describe = [](const PixelShuffle& m) { return Args{m.upscale_factor}; },
      .make = [](const SpecArgs& a) { return std::make_shared<PixelShuffle>(a.integer("upscale_factor")); },
      .constants =
          [](const PixelShuffle& m) {
            return ModuleConstants{{"upscale_factor", py_int(m.upscale_factor)}};
          }});
  return out;
}

}  // namespace fx::nn
