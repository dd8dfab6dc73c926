// fxcpp's torch.nn classes, one entry each: the constructor's parameters as
// PyTorch 2.14 names and orders them (device and dtype aside), then how to
// read them back from a module (in that order), then how to construct one.
// python/fxcpp/modules.py reads the same arguments from torch.nn's modules.
// This file: containers, activations, dropout, linear and shape modules.
#include <fx/error.h>
#include <fx/nn.h>

#include "module_spec_types.h"

namespace fx::detail {
namespace {

// Python's plain torch.nn.Module(), as GraphModule holds the levels of a dotted path.
class PlainSpecModule final : public Module {
 public:
  PlainSpecModule() : Module("torch.nn.Module", {}) {}
  Value forward(const std::vector<Value>&) override { throw Error("torch.nn.Module() has no forward"); }
};

SpecType spec_plain_container() {
  return spec_leaf<Module>(
      "torch.nn.Module", {},
      [](const Module& m) {
        // A class of the user's that calls itself torch.nn.Module would lose its tensors.
        if (!m.named_parameters(false).is_empty() || !m.named_buffers(false).is_empty() ||
            !m.attributes().empty())
          throw Error(
              "module_spec: a torch.nn.Module with tensors of its own is not a plain "
              "container; give its class its own type name");
        return Args{};
      },
      [](const SpecArgs&) { return std::make_shared<PlainSpecModule>(); });
}

// torch.nn.ReLU and its kin: inplace=False only.
template <class M>
SpecType spec_inplace_only(const char* type) {
  return spec_leaf<M>(
      type, {{"inplace", false}}, [](const M& m) { return Args{m.inplace}; },
      [](const SpecArgs& a) { return std::make_shared<M>(a.boolean("inplace")); });
}

// Sigmoid, Identity, ...; and the containers, whose children are described apart.
template <class M>
SpecType spec_no_arguments(const char* type) {
  return spec_leaf<M>(
      type, {}, [](const M&) { return Args{}; }, [](const SpecArgs&) { return std::make_shared<M>(); });
}

template <class M>
SpecType spec_softmax(const char* type) {
  return spec_leaf<M>(
      type, {{"dim", None}}, [](const M& m) { return Args{spec_optional(m.dim)}; },
      [](const SpecArgs& a) { return std::make_shared<M>(a.optional_integer("dim")); });
}

}  // namespace

std::vector<SpecType> elementwise_spec_types() {
  using namespace nn;
  return {
      spec_plain_container(),
      spec_no_arguments<Sequential>("torch.nn.Sequential"),
      spec_no_arguments<ModuleList>("torch.nn.ModuleList"),
      spec_no_arguments<ModuleDict>("torch.nn.ModuleDict"),
      // activation.h
      spec_inplace_only<ReLU>("torch.nn.ReLU"),
      spec_inplace_only<ReLU6>("torch.nn.ReLU6"),
      spec_leaf<LeakyReLU>(
          "torch.nn.LeakyReLU", {{"negative_slope", 0.01}, {"inplace", false}},
          [](const LeakyReLU& m) {
            return Args{m.negative_slope, m.inplace};
          },
          [](const SpecArgs& a) {
            return std::make_shared<LeakyReLU>(a.real("negative_slope"), a.boolean("inplace"));
          }),
      spec_leaf<GELU>(
          "torch.nn.GELU", {{"approximate", "none"}}, [](const GELU& m) { return Args{m.approximate}; },
          [](const SpecArgs& a) { return std::make_shared<GELU>(a.str("approximate")); }),
      spec_inplace_only<SiLU>("torch.nn.SiLU"),
      spec_inplace_only<Mish>("torch.nn.Mish"),
      spec_inplace_only<Hardswish>("torch.nn.Hardswish"),
      spec_inplace_only<Hardsigmoid>("torch.nn.Hardsigmoid"),
      spec_no_arguments<Sigmoid>("torch.nn.Sigmoid"),
      spec_no_arguments<Tanh>("torch.nn.Tanh"),
      spec_softmax<Softmax>("torch.nn.Softmax"),
      spec_softmax<LogSoftmax>("torch.nn.LogSoftmax"),
      // dropout.h
      spec_leaf<Dropout>(
          "torch.nn.Dropout", {{"p", 0.5}, {"inplace", false}},
          [](const Dropout& m) {
            return Args{m.p, m.inplace};
          },
          [](const SpecArgs& a) { return std::make_shared<Dropout>(a.real("p"), a.boolean("inplace")); }),
      spec_leaf<Dropout2d>(
          "torch.nn.Dropout2d", {{"p", 0.5}, {"inplace", false}},
          [](const Dropout2d& m) {
            return Args{m.p, m.inplace};
          },
          [](const SpecArgs& a) { return std::make_shared<Dropout2d>(a.real("p"), a.boolean("inplace")); }),
      // linear.h
      spec_no_arguments<Identity>("torch.nn.Identity"),
      spec_leaf<Linear>(
          "torch.nn.Linear", {"in_features", "out_features", {"bias", true}},
          [](const Linear& m) {
            return Args{m.in_features, m.out_features, m.bias.defined()};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Linear>(a.integer("in_features"), a.integer("out_features"),
                                            a.boolean("bias"));
          }),
      spec_leaf<NonDynamicallyQuantizableLinear>(
          "torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
          {"in_features", "out_features", {"bias", true}},
          [](const Linear& m) {
            return Args{m.in_features, m.out_features, m.bias.defined()};
          },
          [](const SpecArgs& a) {
            return std::make_shared<NonDynamicallyQuantizableLinear>(
                a.integer("in_features"), a.integer("out_features"), a.boolean("bias"));
          }),
      spec_leaf<Bilinear>(
          "torch.nn.Bilinear", {"in1_features", "in2_features", "out_features", {"bias", true}},
          [](const Bilinear& m) {
            return Args{m.in1_features, m.in2_features, m.out_features, m.bias.defined()};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Bilinear>(a.integer("in1_features"), a.integer("in2_features"),
                                              a.integer("out_features"), a.boolean("bias"));
          }),
      // shape.h
      spec_leaf<Flatten>(
          "torch.nn.Flatten", {{"start_dim", 1}, {"end_dim", -1}},
          [](const Flatten& m) {
            return Args{m.start_dim, m.end_dim};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Flatten>(a.integer("start_dim"), a.integer("end_dim"));
          }),
      spec_leaf<Unflatten>(
          "torch.nn.Unflatten", {"dim", "unflattened_size"},
          [](const Unflatten& m) {
            return Args{m.dim, spec_tuple(m.unflattened_size)};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Unflatten>(a.integer("dim"), a.integers("unflattened_size"));
          }),
      spec_leaf<Upsample>(
          "torch.nn.Upsample",
          {{"size", None},
           {"scale_factor", None},
           {"mode", "nearest"},
           {"align_corners", None},
           {"recompute_scale_factor", None}},
          [](const Upsample& m) {
            const auto& o = m.options;
            return Args{spec_one_or_tuple(o.size), spec_one_or_tuple(o.scale_factor), o.mode,
                        spec_optional(o.align_corners), spec_optional(o.recompute_scale_factor)};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Upsample>(Upsample::Options{
                a.integers_or_none("size"), a.reals_or_none("scale_factor"), a.str("mode"),
                a.optional_boolean("align_corners"), a.optional_boolean("recompute_scale_factor")});
          }),
      spec_leaf<PixelShuffle>(
          "torch.nn.PixelShuffle", {"upscale_factor"},
          [](const PixelShuffle& m) { return Args{m.upscale_factor}; },
          [](const SpecArgs& a) { return std::make_shared<PixelShuffle>(a.integer("upscale_factor")); }),
  };
}

const std::vector<SpecType>& spec_types() {
  static const std::vector<SpecType> types = [] {
    std::vector<SpecType> all;
    for (auto family : {elementwise_spec_types, spatial_spec_types, sequence_spec_types})
      for (auto& t : family()) all.push_back(std::move(t));
    return all;
  }();
  return types;
}

}  // namespace fx::detail
