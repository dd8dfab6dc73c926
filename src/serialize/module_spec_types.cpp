// fxcpp's torch.nn classes, one entry each: the constructor's parameters as
// PyTorch 1.13 names and orders them (device and dtype aside), then how to
// read them back from a module (in that order), then how to construct one.
// python/fxcpp/modules.py reads the same arguments from torch.nn's modules.
#include <fx/error.h>
#include <fx/nn.h>

#include "module_spec_types.h"

namespace fx::detail {
namespace {

using nn::ModulePtr;
using A = const SpecArgs&;

Argument spec_tuple(const std::vector<int64_t>& v) { return Tuple{std::vector<Argument>(v.begin(), v.end())}; }

template <class T>
Argument spec_optional(const std::optional<T>& v) {
  return v ? Argument(*v) : Argument(None);
}

// An int or a tuple of ints and Nones, as the pooling module was given it.
Argument spec_pool(const nn::PoolArg& p) {
  auto item = [](const std::optional<int64_t>& i) { return spec_optional(i); };
  if (p.is_int()) return item(p.items()[0]);
  Tuple t;
  for (const auto& i : p.items()) t.items.push_back(item(i));
  return t;
}

// Upsample's size and scale_factor: None, one value (Python's int or float), or a tuple.
template <class T>
Argument spec_one_or_tuple(const std::vector<T>& v) {
  if (v.empty()) return None;
  if (v.size() == 1) return v[0];
  return Tuple{std::vector<Argument>(v.begin(), v.end())};
}

// A leaf module of class M.
template <class M>
SpecType leaf(const char* type, std::vector<SpecParam> params, std::function<Args(const M&)> describe,
              std::function<ModulePtr(A)> make) {
  return {type, std::move(params),
          [describe = std::move(describe), type](const Module& m) {
            const auto* typed = dynamic_cast<const M*>(&m);
            if (!typed) throw Error(std::string("module_spec: a module named ") + type + " is not fxcpp's class for it");
            return describe(*typed);
          },
          std::move(make)};
}

// A container: no arguments of its own, its children are described apart.
template <class M>
SpecType container(const char* type) {
  return leaf<M>(type, {}, [](const M&) { return Args{}; }, [](A) { return std::make_shared<M>(); });
}

// Python's plain torch.nn.Module(), as GraphModule holds the levels of a dotted path.
class PlainSpecModule final : public Module {
 public:
  PlainSpecModule() : Module("torch.nn.Module", {}) {}
  Value forward(const std::vector<Value>&) override { throw Error("torch.nn.Module() has no forward"); }
};

SpecType plain_container() {
  return leaf<Module>("torch.nn.Module", {},
                      [](const Module& m) {
                        // A class of the user's that calls itself torch.nn.Module would lose its tensors.
                        if (!m.named_parameters(false).is_empty() || !m.named_buffers(false).is_empty() ||
                            !m.attributes().empty())
                          throw Error("module_spec: a torch.nn.Module with tensors of its own is not a plain "
                                      "container; give its class its own type name");
                        return Args{};
                      },
                      [](A) { return std::make_shared<PlainSpecModule>(); });
}

// torch.nn.ReLU and its kin: inplace=False only.
template <class M>
SpecType inplace_only(const char* type) {
  return leaf<M>(type, {{"inplace", false}}, [](const M& m) { return Args{m.inplace}; },
                 [](A a) { return std::make_shared<M>(a.boolean("inplace")); });
}

template <class M>
SpecType no_arguments(const char* type) {
  return leaf<M>(type, {}, [](const M&) { return Args{}; }, [](A) { return std::make_shared<M>(); });
}

template <class M>
SpecType softmax(const char* type) {
  return leaf<M>(type, {{"dim", None}}, [](const M& m) { return Args{spec_optional(m.dim)}; },
                 [](A a) { return std::make_shared<M>(a.optional_integer("dim")); });
}

template <class M>
SpecType conv(const char* type) {
  return leaf<M>(
      type,
      {"in_channels", "out_channels", "kernel_size", {"stride", 1}, {"padding", 0}, {"dilation", 1},
       {"groups", 1}, {"bias", true}, {"padding_mode", "zeros"}},
      [](const M& m) {
        return Args{m.in_channels,         m.out_channels,        spec_tuple(m.kernel_size), spec_tuple(m.stride),
                    spec_tuple(m.padding), spec_tuple(m.dilation), m.groups,                  m.bias.defined(),
                    m.padding_mode};
      },
      [](A a) {
        return std::make_shared<M>(a.integer("in_channels"), a.integer("out_channels"), a.integers("kernel_size"),
                                   a.integers("stride"), a.integers("padding"), a.integers("dilation"),
                                   a.integer("groups"), a.boolean("bias"), a.str("padding_mode"));
      });
}

template <class M>
SpecType conv_transpose(const char* type) {
  return leaf<M>(
      type,
      {"in_channels", "out_channels", "kernel_size", {"stride", 1}, {"padding", 0}, {"output_padding", 0},
       {"groups", 1}, {"bias", true}, {"dilation", 1}, {"padding_mode", "zeros"}},
      [](const M& m) {
        return Args{m.in_channels,         m.out_channels,      spec_tuple(m.kernel_size),
                    spec_tuple(m.stride),  spec_tuple(m.padding), spec_tuple(m.output_padding),
                    m.groups,              m.bias.defined(),    spec_tuple(m.dilation),
                    m.padding_mode};
      },
      [](A a) {
        return std::make_shared<M>(a.integer("in_channels"), a.integer("out_channels"), a.integers("kernel_size"),
                                   a.integers("stride"), a.integers("padding"), a.integers("output_padding"),
                                   a.integer("groups"), a.boolean("bias"), a.integers("dilation"),
                                   a.str("padding_mode"));
      });
}

// BatchNorm1d/2d/3d and InstanceNorm2d: the same parameters, different defaults.
template <class M>
SpecType norm(const char* type, bool affine, bool track_running_stats) {
  return leaf<M>(
      type, {"num_features", {"eps", 1e-05}, {"momentum", 0.1}, {"affine", affine}, {"track_running_stats", track_running_stats}},
      [](const M& m) { return Args{m.num_features, m.eps, spec_optional(m.momentum), m.affine, m.track_running_stats}; },
      [](A a) {
        return std::make_shared<M>(a.integer("num_features"), a.real("eps"), a.optional_real("momentum"),
                                   a.boolean("affine"), a.boolean("track_running_stats"));
      });
}

template <class M>
SpecType max_pool(const char* type) {
  return leaf<M>(
      type,
      {"kernel_size", {"stride", None}, {"padding", 0}, {"dilation", 1}, {"return_indices", false}, {"ceil_mode", false}},
      [](const M& m) {
        return Args{spec_pool(m.kernel_size), spec_pool(m.stride), spec_pool(m.padding), spec_pool(m.dilation),
                    m.return_indices, m.ceil_mode};
      },
      [](A a) {
        return std::make_shared<M>(a.pool("kernel_size"), a.optional_pool("stride"), a.pool("padding"),
                                   a.pool("dilation"), a.boolean("return_indices"), a.boolean("ceil_mode"));
      });
}

template <class M>
SpecType adaptive_pool(const char* type) {
  return leaf<M>(type, {"output_size"}, [](const M& m) { return Args{spec_pool(m.output_size)}; },
                 [](A a) { return std::make_shared<M>(a.pool("output_size")); });
}

// RNNBase's parameters; `proj_size` is LSTM's only.
template <class M>
SpecType rnn(const char* type, bool with_proj_size) {
  std::vector<SpecParam> params = {"input_size",          "hidden_size",     {"num_layers", 1},
                                   {"bias", true},        {"batch_first", false}, {"dropout", 0.0},
                                   {"bidirectional", false}};
  if (with_proj_size) params.emplace_back("proj_size", 0);
  return leaf<M>(
      type, std::move(params),
      [with_proj_size](const M& m) {
        Args v{m.input_size, m.hidden_size, m.num_layers, m.bias, m.batch_first, m.dropout, m.bidirectional};
        if (with_proj_size) v.emplace_back(m.proj_size);
        return v;
      },
      [](A a) -> ModulePtr {
        if constexpr (std::is_same_v<M, nn::LSTM>)
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"), a.integer("num_layers"),
                                     a.boolean("bias"), a.boolean("batch_first"), a.real("dropout"),
                                     a.boolean("bidirectional"), a.integer("proj_size"));
        else
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"), a.integer("num_layers"),
                                     a.boolean("bias"), a.boolean("batch_first"), a.real("dropout"),
                                     a.boolean("bidirectional"));
      });
}

std::vector<SpecType> all_spec_types() {
  using namespace nn;
  return {
      plain_container(),
      container<Sequential>("torch.nn.Sequential"),
      container<ModuleList>("torch.nn.ModuleList"),
      container<ModuleDict>("torch.nn.ModuleDict"),
      // activation.h
      inplace_only<ReLU>("torch.nn.ReLU"),
      inplace_only<ReLU6>("torch.nn.ReLU6"),
      leaf<LeakyReLU>("torch.nn.LeakyReLU", {{"negative_slope", 0.01}, {"inplace", false}},
                      [](const LeakyReLU& m) { return Args{m.negative_slope, m.inplace}; },
                      [](A a) { return std::make_shared<LeakyReLU>(a.real("negative_slope"), a.boolean("inplace")); }),
      leaf<GELU>("torch.nn.GELU", {{"approximate", "none"}}, [](const GELU& m) { return Args{m.approximate}; },
                 [](A a) { return std::make_shared<GELU>(a.str("approximate")); }),
      inplace_only<SiLU>("torch.nn.SiLU"),
      inplace_only<Mish>("torch.nn.Mish"),
      inplace_only<Hardswish>("torch.nn.Hardswish"),
      inplace_only<Hardsigmoid>("torch.nn.Hardsigmoid"),
      no_arguments<Sigmoid>("torch.nn.Sigmoid"),
      no_arguments<Tanh>("torch.nn.Tanh"),
      softmax<Softmax>("torch.nn.Softmax"),
      softmax<LogSoftmax>("torch.nn.LogSoftmax"),
      // attention.h: bias and add_bias_kv are flags here, tensors (or None) on the module.
      leaf<MultiheadAttention>(
          "torch.nn.MultiheadAttention",
          {"embed_dim", "num_heads", {"dropout", 0.0}, {"bias", true}, {"add_bias_kv", false},
           {"add_zero_attn", false}, {"kdim", None}, {"vdim", None}, {"batch_first", false}},
          [](const MultiheadAttention& m) {
            return Args{m.embed_dim,         m.num_heads, m.dropout, m.in_proj_bias.defined(), m.bias_k.defined(),
                        m.add_zero_attn,     m.kdim,      m.vdim,    m.batch_first};
          },
          [](A a) {
            return std::make_shared<MultiheadAttention>(
                a.integer("embed_dim"), a.integer("num_heads"), a.real("dropout"), a.boolean("bias"),
                a.boolean("add_bias_kv"), a.boolean("add_zero_attn"), a.optional_integer("kdim"),
                a.optional_integer("vdim"), a.boolean("batch_first"));
          }),
      // conv.h
      conv<Conv1d>("torch.nn.Conv1d"),
      conv<Conv2d>("torch.nn.Conv2d"),
      conv<Conv3d>("torch.nn.Conv3d"),
      conv_transpose<ConvTranspose1d>("torch.nn.ConvTranspose1d"),
      conv_transpose<ConvTranspose2d>("torch.nn.ConvTranspose2d"),
      // dropout.h
      leaf<Dropout>("torch.nn.Dropout", {{"p", 0.5}, {"inplace", false}},
                    [](const Dropout& m) { return Args{m.p, m.inplace}; },
                    [](A a) { return std::make_shared<Dropout>(a.real("p"), a.boolean("inplace")); }),
      leaf<Dropout2d>("torch.nn.Dropout2d", {{"p", 0.5}, {"inplace", false}},
                      [](const Dropout2d& m) { return Args{m.p, m.inplace}; },
                      [](A a) { return std::make_shared<Dropout2d>(a.real("p"), a.boolean("inplace")); }),
      // embedding.h (PyTorch's _weight argument aside)
      leaf<Embedding>(
          "torch.nn.Embedding",
          {"num_embeddings", "embedding_dim", {"padding_idx", None}, {"max_norm", None}, {"norm_type", 2.0},
           {"scale_grad_by_freq", false}, {"sparse", false}},
          [](const Embedding& m) {
            return Args{m.num_embeddings, m.embedding_dim,        spec_optional(m.padding_idx), spec_optional(m.max_norm),
                        m.norm_type,      m.scale_grad_by_freq, m.sparse};
          },
          [](A a) {
            return std::make_shared<Embedding>(a.integer("num_embeddings"), a.integer("embedding_dim"),
                                               a.optional_integer("padding_idx"), a.optional_real("max_norm"),
                                               a.real("norm_type"), a.boolean("scale_grad_by_freq"),
                                               a.boolean("sparse"));
          }),
      leaf<EmbeddingBag>(
          "torch.nn.EmbeddingBag",
          {"num_embeddings", "embedding_dim", {"max_norm", None}, {"norm_type", 2.0}, {"scale_grad_by_freq", false},
           {"mode", "mean"}, {"sparse", false}, {"include_last_offset", false}, {"padding_idx", None}},
          [](const EmbeddingBag& m) {
            return Args{m.num_embeddings, m.embedding_dim, spec_optional(m.max_norm), m.norm_type,
                        m.scale_grad_by_freq, m.mode, m.sparse, m.include_last_offset, spec_optional(m.padding_idx)};
          },
          [](A a) {
            return std::make_shared<EmbeddingBag>(
                a.integer("num_embeddings"), a.integer("embedding_dim"), a.optional_real("max_norm"),
                a.real("norm_type"), a.boolean("scale_grad_by_freq"), a.str("mode"), a.boolean("sparse"),
                a.boolean("include_last_offset"), a.optional_integer("padding_idx"));
          }),
      // linear.h
      no_arguments<Identity>("torch.nn.Identity"),
      leaf<Linear>("torch.nn.Linear", {"in_features", "out_features", {"bias", true}},
                   [](const Linear& m) { return Args{m.in_features, m.out_features, m.bias.defined()}; },
                   [](A a) {
                     return std::make_shared<Linear>(a.integer("in_features"), a.integer("out_features"),
                                                     a.boolean("bias"));
                   }),
      leaf<NonDynamicallyQuantizableLinear>(
          "torch.nn.modules.linear.NonDynamicallyQuantizableLinear", {"in_features", "out_features", {"bias", true}},
          [](const Linear& m) { return Args{m.in_features, m.out_features, m.bias.defined()}; },
          [](A a) {
            return std::make_shared<NonDynamicallyQuantizableLinear>(a.integer("in_features"),
                                                                     a.integer("out_features"), a.boolean("bias"));
          }),
      leaf<Bilinear>("torch.nn.Bilinear", {"in1_features", "in2_features", "out_features", {"bias", true}},
                     [](const Bilinear& m) {
                       return Args{m.in1_features, m.in2_features, m.out_features, m.bias.defined()};
                     },
                     [](A a) {
                       return std::make_shared<Bilinear>(a.integer("in1_features"), a.integer("in2_features"),
                                                         a.integer("out_features"), a.boolean("bias"));
                     }),
      // normalization.h
      norm<BatchNorm1d>("torch.nn.BatchNorm1d", true, true),
      norm<BatchNorm2d>("torch.nn.BatchNorm2d", true, true),
      norm<BatchNorm3d>("torch.nn.BatchNorm3d", true, true),
      norm<InstanceNorm2d>("torch.nn.InstanceNorm2d", false, false),
      leaf<LayerNorm>("torch.nn.LayerNorm", {"normalized_shape", {"eps", 1e-05}, {"elementwise_affine", true}},
                      [](const LayerNorm& m) { return Args{spec_tuple(m.normalized_shape), m.eps, m.elementwise_affine}; },
                      [](A a) {
                        return std::make_shared<LayerNorm>(a.integers("normalized_shape"), a.real("eps"),
                                                           a.boolean("elementwise_affine"));
                      }),
      leaf<GroupNorm>("torch.nn.GroupNorm", {"num_groups", "num_channels", {"eps", 1e-05}, {"affine", true}},
                      [](const GroupNorm& m) { return Args{m.num_groups, m.num_channels, m.eps, m.affine}; },
                      [](A a) {
                        return std::make_shared<GroupNorm>(a.integer("num_groups"), a.integer("num_channels"),
                                                           a.real("eps"), a.boolean("affine"));
                      }),
      // pooling.h: sizes stay as given, an int or a tuple; a stride of None is stored as kernel_size.
      max_pool<MaxPool1d>("torch.nn.MaxPool1d"),
      max_pool<MaxPool2d>("torch.nn.MaxPool2d"),
      leaf<AvgPool2d>(
          "torch.nn.AvgPool2d",
          {"kernel_size", {"stride", None}, {"padding", 0}, {"ceil_mode", false}, {"count_include_pad", true},
           {"divisor_override", None}},
          [](const AvgPool2d& m) {
            return Args{spec_pool(m.kernel_size), spec_pool(m.stride), spec_pool(m.padding), m.ceil_mode,
                        m.count_include_pad, spec_optional(m.divisor_override)};
          },
          [](A a) {
            return std::make_shared<AvgPool2d>(a.pool("kernel_size"), a.optional_pool("stride"), a.pool("padding"),
                                               a.boolean("ceil_mode"), a.boolean("count_include_pad"),
                                               a.optional_integer("divisor_override"));
          }),
      adaptive_pool<AdaptiveAvgPool1d>("torch.nn.AdaptiveAvgPool1d"),
      adaptive_pool<AdaptiveAvgPool2d>("torch.nn.AdaptiveAvgPool2d"),
      // rnn.h
      rnn<LSTM>("torch.nn.LSTM", true),
      rnn<GRU>("torch.nn.GRU", false),
      // shape.h
      leaf<Flatten>("torch.nn.Flatten", {{"start_dim", 1}, {"end_dim", -1}},
                    [](const Flatten& m) { return Args{m.start_dim, m.end_dim}; },
                    [](A a) { return std::make_shared<Flatten>(a.integer("start_dim"), a.integer("end_dim")); }),
      leaf<Unflatten>("torch.nn.Unflatten", {"dim", "unflattened_size"},
                      [](const Unflatten& m) { return Args{m.dim, spec_tuple(m.unflattened_size)}; },
                      [](A a) { return std::make_shared<Unflatten>(a.integer("dim"), a.integers("unflattened_size")); }),
      leaf<Upsample>(
          "torch.nn.Upsample",
          {{"size", None}, {"scale_factor", None}, {"mode", "nearest"}, {"align_corners", None},
           {"recompute_scale_factor", None}},
          [](const Upsample& m) {
            const auto& o = m.options;
            return Args{spec_one_or_tuple(o.size), spec_one_or_tuple(o.scale_factor), o.mode,
                        spec_optional(o.align_corners), spec_optional(o.recompute_scale_factor)};
          },
          [](A a) {
            return std::make_shared<Upsample>(Upsample::Options{
                a.integers_or_none("size"), a.reals_or_none("scale_factor"), a.str("mode"),
                a.optional_boolean("align_corners"), a.optional_boolean("recompute_scale_factor")});
          }),
      leaf<PixelShuffle>("torch.nn.PixelShuffle", {"upscale_factor"},
                         [](const PixelShuffle& m) { return Args{m.upscale_factor}; },
                         [](A a) { return std::make_shared<PixelShuffle>(a.integer("upscale_factor")); }),
      // transformer.h: PyTorch keeps most arguments only in the children, so both sides read them there.
      leaf<TransformerEncoderLayer>(
          "torch.nn.TransformerEncoderLayer",
          {"d_model", "nhead", {"dim_feedforward", 2048}, {"dropout", 0.1}, {"activation", "relu"},
           {"layer_norm_eps", 1e-05}, {"batch_first", false}, {"norm_first", false}},
          [](const TransformerEncoderLayer& m) {
            return Args{m.self_attn->embed_dim, m.self_attn->num_heads, m.linear1->out_features, m.dropout->p,
                        m.activation,         m.norm1->eps,           m.self_attn->batch_first, m.norm_first};
          },
          [](A a) {
            return std::make_shared<TransformerEncoderLayer>(
                a.integer("d_model"), a.integer("nhead"), a.integer("dim_feedforward"), a.real("dropout"),
                a.str("activation"), a.real("layer_norm_eps"), a.boolean("batch_first"), a.boolean("norm_first"));
          }),
  };
}

}  // namespace

const std::vector<SpecType>& spec_types() {
  static const std::vector<SpecType> types = all_spec_types();
  return types;
}

}  // namespace fx::detail
