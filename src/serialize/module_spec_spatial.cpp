// The entries of module_spec_types.cpp's table for convolutions,
// normalization, pooling and embeddings.
#include <fx/error.h>
#include <fx/nn.h>

#include "module_spec_types.h"

namespace fx::detail {
namespace {

template <class M>
SpecType spec_conv(const char* type) {
  return spec_leaf<M>(
      type,
      {"in_channels",
       "out_channels",
       "kernel_size",
       {"stride", 1},
       {"padding", 0},
       {"dilation", 1},
       {"groups", 1},
       {"bias", true},
       {"padding_mode", "zeros"}},
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
      [](const SpecArgs& a) {
        return std::make_shared<M>(a.integer("in_channels"), a.integer("out_channels"),
                                   a.integers("kernel_size"), a.integers("stride"), a.integers("padding"),
                                   a.integers("dilation"), a.integer("groups"), a.boolean("bias"),
                                   a.str("padding_mode"));
      });
}

template <class M>
SpecType spec_conv_transpose(const char* type) {
  return spec_leaf<M>(
      type,
      {"in_channels",
       "out_channels",
       "kernel_size",
       {"stride", 1},
       {"padding", 0},
       {"output_padding", 0},
       {"groups", 1},
       {"bias", true},
       {"dilation", 1},
       {"padding_mode", "zeros"}},
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
      [](const SpecArgs& a) {
        return std::make_shared<M>(a.integer("in_channels"), a.integer("out_channels"),
                                   a.integers("kernel_size"), a.integers("stride"), a.integers("padding"),
                                   a.integers("output_padding"), a.integer("groups"), a.boolean("bias"),
                                   a.integers("dilation"), a.str("padding_mode"));
      });
}

// BatchNorm1d/2d/3d and InstanceNorm2d: the same parameters, different
// defaults. torch 2.x adds a keyword-only `bias` after device and dtype; the
// module holds no bias without affine, so it reads back as False then.
template <class M>
SpecType spec_norm(const char* type, bool affine, bool track_running_stats) {
  return spec_leaf<M>(
      type,
      {"num_features",
       {"eps", 1e-05},
       {"momentum", 0.1},
       {"affine", affine},
       {"track_running_stats", track_running_stats},
       {"bias", true}},
      [](const M& m) {
        return Args{m.num_features,        m.eps,           spec_optional(m.momentum), m.affine,
                    m.track_running_stats, m.bias.defined()};
      },
      [type](const SpecArgs& a) {
        spec_require_bias(a, type, a.boolean("affine"));
        return std::make_shared<M>(a.integer("num_features"), a.real("eps"), a.optional_real("momentum"),
                                   a.boolean("affine"), a.boolean("track_running_stats"));
      });
}

template <class M>
SpecType spec_max_pool(const char* type) {
  return spec_leaf<M>(
      type,
      {"kernel_size",
       {"stride", None},
       {"padding", 0},
       {"dilation", 1},
       {"return_indices", false},
       {"ceil_mode", false}},
      [](const M& m) {
        return Args{spec_pool(m.kernel_size), spec_pool(m.stride), spec_pool(m.padding),
                    spec_pool(m.dilation),    m.return_indices,    m.ceil_mode};
      },
      [](const SpecArgs& a) {
        return std::make_shared<M>(a.pool("kernel_size"), a.optional_pool("stride"), a.pool("padding"),
                                   a.pool("dilation"), a.boolean("return_indices"), a.boolean("ceil_mode"));
      });
}

template <class M>
SpecType spec_adaptive_pool(const char* type) {
  return spec_leaf<M>(
      type, {"output_size"}, [](const M& m) { return Args{spec_pool(m.output_size)}; },
      [](const SpecArgs& a) { return std::make_shared<M>(a.pool("output_size")); });
}

// RNNBase's parameters; `proj_size` is LSTM's only.

}  // namespace

std::vector<SpecType> spatial_spec_types() {
  using namespace nn;
  return {
      // conv.h
      spec_conv<Conv1d>("torch.nn.Conv1d"),
      spec_conv<Conv2d>("torch.nn.Conv2d"),
      spec_conv<Conv3d>("torch.nn.Conv3d"),
      spec_conv_transpose<ConvTranspose1d>("torch.nn.ConvTranspose1d"),
      spec_conv_transpose<ConvTranspose2d>("torch.nn.ConvTranspose2d"),
      // normalization.h
      spec_norm<BatchNorm1d>("torch.nn.BatchNorm1d", true, true),
      spec_norm<BatchNorm2d>("torch.nn.BatchNorm2d", true, true),
      spec_norm<BatchNorm3d>("torch.nn.BatchNorm3d", true, true),
      spec_norm<InstanceNorm2d>("torch.nn.InstanceNorm2d", false, false),
      // LayerNorm and GroupNorm: torch 2.x's `bias` as for the norms above.
      spec_leaf<LayerNorm>(
          "torch.nn.LayerNorm",
          {"normalized_shape", {"eps", 1e-05}, {"elementwise_affine", true}, {"bias", true}},
          [](const LayerNorm& m) {
            return Args{spec_tuple(m.normalized_shape), m.eps, m.elementwise_affine, m.bias.defined()};
          },
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.LayerNorm", a.boolean("elementwise_affine"));
            return std::make_shared<LayerNorm>(a.integers("normalized_shape"), a.real("eps"),
                                               a.boolean("elementwise_affine"));
          }),
      spec_leaf<GroupNorm>(
          "torch.nn.GroupNorm",
          {"num_groups", "num_channels", {"eps", 1e-05}, {"affine", true}, {"bias", true}},
          [](const GroupNorm& m) {
            return Args{m.num_groups, m.num_channels, m.eps, m.affine, m.bias.defined()};
          },
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.GroupNorm", a.boolean("affine"));
            return std::make_shared<GroupNorm>(a.integer("num_groups"), a.integer("num_channels"),
                                               a.real("eps"), a.boolean("affine"));
          }),
      // pooling.h: sizes stay as given, an int or a tuple; a stride of None is stored as kernel_size.
      spec_max_pool<MaxPool1d>("torch.nn.MaxPool1d"),
      spec_max_pool<MaxPool2d>("torch.nn.MaxPool2d"),
      spec_leaf<AvgPool2d>(
          "torch.nn.AvgPool2d",
          {"kernel_size",
           {"stride", None},
           {"padding", 0},
           {"ceil_mode", false},
           {"count_include_pad", true},
           {"divisor_override", None}},
          [](const AvgPool2d& m) {
            return Args{spec_pool(m.kernel_size), spec_pool(m.stride),
                        spec_pool(m.padding),     m.ceil_mode,
                        m.count_include_pad,      spec_optional(m.divisor_override)};
          },
          [](const SpecArgs& a) {
            return std::make_shared<AvgPool2d>(
                a.pool("kernel_size"), a.optional_pool("stride"), a.pool("padding"), a.boolean("ceil_mode"),
                a.boolean("count_include_pad"), a.optional_integer("divisor_override"));
          }),
      spec_adaptive_pool<AdaptiveAvgPool1d>("torch.nn.AdaptiveAvgPool1d"),
      spec_adaptive_pool<AdaptiveAvgPool2d>("torch.nn.AdaptiveAvgPool2d"),
      // embedding.h (PyTorch's _weight argument aside)
      spec_leaf<Embedding>(
          "torch.nn.Embedding",
          {"num_embeddings",
           "embedding_dim",
           {"padding_idx", None},
           {"max_norm", None},
           {"norm_type", 2.0},
           {"scale_grad_by_freq", false},
           {"sparse", false}},
          [](const Embedding& m) {
            return Args{m.num_embeddings,
                        m.embedding_dim,
                        spec_optional(m.padding_idx),
                        spec_optional(m.max_norm),
                        m.norm_type,
                        m.scale_grad_by_freq,
                        m.sparse};
          },
          [](const SpecArgs& a) {
            return std::make_shared<Embedding>(a.integer("num_embeddings"), a.integer("embedding_dim"),
                                               a.optional_integer("padding_idx"), a.optional_real("max_norm"),
                                               a.real("norm_type"), a.boolean("scale_grad_by_freq"),
                                               a.boolean("sparse"));
          }),
      spec_leaf<EmbeddingBag>(
          "torch.nn.EmbeddingBag",
          {"num_embeddings",
           "embedding_dim",
           {"max_norm", None},
           {"norm_type", 2.0},
           {"scale_grad_by_freq", false},
           {"mode", "mean"},
           {"sparse", false},
           {"include_last_offset", false},
           {"padding_idx", None}},
          [](const EmbeddingBag& m) {
            return Args{m.num_embeddings, m.embedding_dim,       spec_optional(m.max_norm),
                        m.norm_type,      m.scale_grad_by_freq,  m.mode,
                        m.sparse,         m.include_last_offset, spec_optional(m.padding_idx)};
          },
          [](const SpecArgs& a) {
            return std::make_shared<EmbeddingBag>(
                a.integer("num_embeddings"), a.integer("embedding_dim"), a.optional_real("max_norm"),
                a.real("norm_type"), a.boolean("scale_grad_by_freq"), a.str("mode"), a.boolean("sparse"),
                a.boolean("include_last_offset"), a.optional_integer("padding_idx"));
          }),
  };
}

}  // namespace fx::detail
