// torch.nn's module paths and __constants__, for fx::nn's modules: torch
// 2.14's.
#include <fx/nn.h>

#include "../ir/repr.h"
#include "module_info.h"

#include <string_view>
#include "../nn/python_values.h"

namespace fx::passes::detail {

namespace {

// The file of torch/nn/modules/ that defines each class fx::nn ports.
constexpr std::pair<std::string_view, std::string_view> kModuleFiles[] = {
    {"ReLU", "activation"},
    {"ReLU6", "activation"},
    {"LeakyReLU", "activation"},
    {"GELU", "activation"},
    {"SiLU", "activation"},
    {"Mish", "activation"},
    {"Hardswish", "activation"},
    {"Hardsigmoid", "activation"},
    {"Sigmoid", "activation"},
    {"Tanh", "activation"},
    {"Softmax", "activation"},
    {"LogSoftmax", "activation"},
    {"MultiheadAttention", "activation"},
    {"Sequential", "container"},
    {"ModuleList", "container"},
    {"ModuleDict", "container"},
    {"Conv1d", "conv"},
    {"Conv2d", "conv"},
    {"Conv3d", "conv"},
    {"ConvTranspose1d", "conv"},
    {"ConvTranspose2d", "conv"},
    {"Dropout", "dropout"},
    {"Dropout2d", "dropout"},
    {"Embedding", "sparse"},
    {"EmbeddingBag", "sparse"},
    {"Identity", "linear"},
    {"Linear", "linear"},
    {"NonDynamicallyQuantizableLinear", "linear"},
    {"Bilinear", "linear"},
    {"BatchNorm1d", "batchnorm"},
    {"BatchNorm2d", "batchnorm"},
    {"BatchNorm3d", "batchnorm"},
    {"InstanceNorm2d", "instancenorm"},
    {"LayerNorm", "normalization"},
    {"GroupNorm", "normalization"},
    {"MaxPool1d", "pooling"},
    {"MaxPool2d", "pooling"},
    {"AvgPool2d", "pooling"},
    {"AdaptiveAvgPool1d", "pooling"},
    {"AdaptiveAvgPool2d", "pooling"},
    {"LSTM", "rnn"},
    {"GRU", "rnn"},
    {"Flatten", "flatten"},
    {"Unflatten", "flatten"},
    {"Upsample", "upsampling"},
    {"PixelShuffle", "pixelshuffle"},
    {"TransformerEncoderLayer", "transformer"},
};

using fx::nn::detail::py_bool;
using fx::nn::detail::py_float;
std::string py_int(int64_t i) { return std::to_string(i); }
template <class T, class F>
std::string py_optional(const std::optional<T>& v, F&& show) {
  return v ? show(*v) : "None";
}
using fx::nn::detail::py_tuple;

using Constants = std::vector<std::pair<std::string, std::string>>;

Constants norm_constants(const nn::NormBase& m) {
  return {{"track_running_stats", py_bool(m.track_running_stats)},
          {"momentum", py_optional(m.momentum, py_float)},
          {"eps", py_float(m.eps)},
          {"num_features", py_int(m.num_features)},
          {"affine", py_bool(m.affine)}};
}

}  // namespace

std::string module_typename(const torch::nn::Module& m) {
  const auto* fm = dynamic_cast<const Module*>(&m);
  if (!fm) return m.name();
  const std::string& t = fm->type_name();
  if (t.starts_with("torch.nn.") && t.find('.', 9) == std::string::npos) {
    std::string_view cls = std::string_view(t).substr(9);
    for (const auto& [name, file] : kModuleFiles)
      if (name == cls) return "torch.nn.modules." + std::string(file) + "." + std::string(cls);
  }
  return t;
}

std::optional<Constants> module_constants(const torch::nn::Module& m) {
  if (const auto* c = dynamic_cast<const nn::ConvNd*>(&m)) {
    return Constants{
        {"stride", py_tuple(c->stride)},          {"padding", py_tuple(c->padding)},
        {"dilation", py_tuple(c->dilation)},      {"groups", py_int(c->groups)},
        {"padding_mode", c->padding_mode},        {"output_padding", py_tuple(c->output_padding)},
        {"in_channels", py_int(c->in_channels)},  {"out_channels", py_int(c->out_channels)},
        {"kernel_size", py_tuple(c->kernel_size)}};
  }
  if (const auto* n = dynamic_cast<const nn::NormBase*>(&m)) return norm_constants(*n);
  if (const auto* l = dynamic_cast<const nn::Linear*>(&m))
    return Constants{{"in_features", py_int(l->in_features)}, {"out_features", py_int(l->out_features)}};
  if (const auto* b = dynamic_cast<const nn::Bilinear*>(&m))
    return Constants{{"in1_features", py_int(b->in1_features)},
                     {"in2_features", py_int(b->in2_features)},
                     {"out_features", py_int(b->out_features)}};
  if (const auto* r = dynamic_cast<const nn::ReLU*>(&m)) return Constants{{"inplace", py_bool(r->inplace)}};
  if (const auto* r = dynamic_cast<const nn::ReLU6*>(&m))
    return Constants{{"min_val", py_float(r->min_val)},
                     {"max_val", py_float(r->max_val)},
                     {"inplace", py_bool(r->inplace)}};
  if (const auto* r = dynamic_cast<const nn::LeakyReLU*>(&m))
    return Constants{{"inplace", py_bool(r->inplace)}, {"negative_slope", py_float(r->negative_slope)}};
  if (const auto* g = dynamic_cast<const nn::GELU*>(&m)) return Constants{{"approximate", g->approximate}};
  if (const auto* a = dynamic_cast<const nn::SiLU*>(&m)) return Constants{{"inplace", py_bool(a->inplace)}};
  if (const auto* a = dynamic_cast<const nn::Mish*>(&m)) return Constants{{"inplace", py_bool(a->inplace)}};
  if (const auto* a = dynamic_cast<const nn::Hardswish*>(&m))
    return Constants{{"inplace", py_bool(a->inplace)}};
  if (const auto* a = dynamic_cast<const nn::Hardsigmoid*>(&m))
    return Constants{{"inplace", py_bool(a->inplace)}};
  if (const auto* s = dynamic_cast<const nn::Softmax*>(&m))
    return Constants{{"dim", py_optional(s->dim, py_int)}};
  if (const auto* s = dynamic_cast<const nn::LogSoftmax*>(&m))
    return Constants{{"dim", py_optional(s->dim, py_int)}};
  if (const auto* a = dynamic_cast<const nn::MultiheadAttention*>(&m))
    return Constants{{"batch_first", py_bool(a->batch_first)}};
  if (const auto* t = dynamic_cast<const nn::TransformerEncoderLayer*>(&m))
    return Constants{{"norm_first", py_bool(t->norm_first)}};
  if (const auto* d = dynamic_cast<const nn::Dropout*>(&m))
    return Constants{{"p", py_float(d->p)}, {"inplace", py_bool(d->inplace)}};
  if (const auto* e = dynamic_cast<const nn::Embedding*>(&m))
    return Constants{{"num_embeddings", py_int(e->num_embeddings)},
                     {"embedding_dim", py_int(e->embedding_dim)},
                     {"padding_idx", py_optional(e->padding_idx, py_int)},
                     {"max_norm", py_optional(e->max_norm, py_float)},
                     {"norm_type", py_float(e->norm_type)},
                     {"scale_grad_by_freq", py_bool(e->scale_grad_by_freq)},
                     {"sparse", py_bool(e->sparse)}};
  if (const auto* e = dynamic_cast<const nn::EmbeddingBag*>(&m))
    return Constants{{"num_embeddings", py_int(e->num_embeddings)},
                     {"embedding_dim", py_int(e->embedding_dim)},
                     {"max_norm", py_optional(e->max_norm, py_float)},
                     {"norm_type", py_float(e->norm_type)},
                     {"scale_grad_by_freq", py_bool(e->scale_grad_by_freq)},
                     {"mode", e->mode},
                     {"sparse", py_bool(e->sparse)},
                     {"include_last_offset", py_bool(e->include_last_offset)},
                     {"padding_idx", py_optional(e->padding_idx, py_int)}};
  if (const auto* l = dynamic_cast<const nn::LayerNorm*>(&m))
    return Constants{{"normalized_shape", py_tuple(l->normalized_shape)},
                     {"eps", py_float(l->eps)},
                     {"elementwise_affine", py_bool(l->elementwise_affine)}};
  if (const auto* g = dynamic_cast<const nn::GroupNorm*>(&m))
    return Constants{{"num_groups", py_int(g->num_groups)},
                     {"num_channels", py_int(g->num_channels)},
                     {"eps", py_float(g->eps)},
                     {"affine", py_bool(g->affine)}};
  if (const auto* p = dynamic_cast<const nn::MaxPoolNd*>(&m))
    return Constants{{"kernel_size", p->kernel_size.str()},
                     {"stride", p->stride.str()},
                     {"padding", p->padding.str()},
                     {"dilation", p->dilation.str()},
                     {"return_indices", py_bool(p->return_indices)},
                     {"ceil_mode", py_bool(p->ceil_mode)}};
  if (const auto* p = dynamic_cast<const nn::AvgPool2d*>(&m))
    return Constants{{"kernel_size", p->kernel_size.str()},
                     {"stride", p->stride.str()},
                     {"padding", p->padding.str()},
                     {"ceil_mode", py_bool(p->ceil_mode)},
                     {"count_include_pad", py_bool(p->count_include_pad)},
                     {"divisor_override", py_optional(p->divisor_override, py_int)}};
  if (const auto* p = dynamic_cast<const nn::AdaptiveAvgPoolNd*>(&m))
    return Constants{{"output_size", p->output_size.str()}};
  if (const auto* r = dynamic_cast<const nn::RNNBase*>(&m))
    return Constants{{"mode", dynamic_cast<const nn::LSTM*>(&m) ? "LSTM" : "GRU"},
                     {"input_size", py_int(r->input_size)},
                     {"hidden_size", py_int(r->hidden_size)},
                     {"num_layers", py_int(r->num_layers)},
                     {"bias", py_bool(r->bias)},
                     {"batch_first", py_bool(r->batch_first)},
                     {"dropout", py_float(r->dropout)},
                     {"bidirectional", py_bool(r->bidirectional)},
                     {"proj_size", py_int(r->proj_size)}};
  if (const auto* f = dynamic_cast<const nn::Flatten*>(&m))
    return Constants{{"start_dim", py_int(f->start_dim)}, {"end_dim", py_int(f->end_dim)}};
  if (const auto* u = dynamic_cast<const nn::Unflatten*>(&m))
    return Constants{{"dim", py_int(u->dim)}, {"unflattened_size", py_tuple(u->unflattened_size)}};
  if (const auto* p = dynamic_cast<const nn::PixelShuffle*>(&m))
    return Constants{{"upscale_factor", py_int(p->upscale_factor)}};
  if (const auto* u = dynamic_cast<const nn::Upsample*>(&m)) {
    const auto& o = u->options;
    std::string size = o.size.empty() ? "None" : o.size.size() == 1 ? py_int(o.size[0]) : py_tuple(o.size);
    std::string scale = "None";
    if (o.scale_factor.size() == 1) {
      scale = py_float(o.scale_factor[0]);
    } else if (!o.scale_factor.empty()) {
      scale = "(";
      for (size_t i = 0; i < o.scale_factor.size(); ++i)
        scale += (i ? ", " : "") + py_float(o.scale_factor[i]);
      scale += ")";
    }
    return Constants{
        {"size", size},       {"scale_factor", scale},
        {"mode", o.mode},     {"align_corners", py_optional(o.align_corners, py_bool)},
        {"name", "Upsample"}, {"recompute_scale_factor", py_optional(o.recompute_scale_factor, py_bool)}};
  }
  return std::nullopt;
}

}  // namespace fx::passes::detail
