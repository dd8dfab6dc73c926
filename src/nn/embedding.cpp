// torch/nn/modules/sparse.py
#include <fx/nn/embedding.h>
#include <fx/nn/init.h>

#include <torch/nn/init.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

namespace {
// Embedding.__init__'s padding_idx check: negative counts from the end.
std::optional<int64_t> normalize_padding_idx(const std::string& module, std::optional<int64_t> idx,
                                             int64_t n) {
  if (!idx) return idx;
  if (*idx >= n || *idx < -n)
    throw Error(module + ": AssertionError: Padding_idx must be within num_embeddings, got " +
                std::to_string(*idx) + " for " + std::to_string(n) + " embeddings");
  return *idx < 0 ? *idx + n : *idx;
}

at::Tensor normal_weight(int64_t n, int64_t dim, std::optional<int64_t> padding_idx) {
  at::Tensor w = torch::empty({n, dim});
  if (init_skipped()) return w;
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(w);
  if (padding_idx) w[*padding_idx].fill_(0);
  return w;
}
}  // namespace

Embedding::Embedding(int64_t n, int64_t dim, std::optional<int64_t> padding_idx_,
                     std::optional<double> max_norm_, double norm_type_, bool scale_grad_by_freq_,
                     bool sparse_)
    : StandardModule("torch.nn.Embedding", {"input"}),
      num_embeddings(n),
      embedding_dim(dim),
      padding_idx(normalize_padding_idx("torch.nn.Embedding", padding_idx_, n)),
      max_norm(max_norm_),
      norm_type(norm_type_),
      scale_grad_by_freq(scale_grad_by_freq_),
      sparse(sparse_) {
  if (n < 0 || dim < 0)
    throw Error("torch.nn.Embedding: num_embeddings and embedding_dim must not be negative");
  weight = register_parameter("weight", normal_weight(n, dim, padding_idx));
}

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  if (max_norm) s += ", max_norm=" + py_float(*max_norm);
  if (norm_type != 2) s += ", norm_type=" + py_float(norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  if (sparse) s += ", sparse=True";
  return s;
}

Value Embedding::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.embedding", args[0], Value(weight), optional_value(padding_idx),
                  optional_value(max_norm), norm_type, scale_grad_by_freq, sparse);
}

ModulePtr Embedding::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Embedding>(num_embeddings, embedding_dim, padding_idx, max_norm,
                                                  norm_type, scale_grad_by_freq, sparse),
                      *this, device);
}

EmbeddingBag::EmbeddingBag(int64_t n, int64_t dim, std::optional<double> max_norm_, double norm_type_,
                           bool scale_grad_by_freq_, std::string mode_, bool sparse_,
                           bool include_last_offset_, std::optional<int64_t> padding_idx_)
    : StandardModule("torch.nn.EmbeddingBag",
                     {"input", {"offsets", Value()}, {"per_sample_weights", Value()}}),
      num_embeddings(n),
      embedding_dim(dim),
      max_norm(max_norm_),
      norm_type(norm_type_),
      scale_grad_by_freq(scale_grad_by_freq_),
      mode(std::move(mode_)),
      sparse(sparse_),
      include_last_offset(include_last_offset_),
      padding_idx(normalize_padding_idx("torch.nn.EmbeddingBag", padding_idx_, n)) {
  if (n < 0 || dim < 0)
    throw Error("torch.nn.EmbeddingBag: num_embeddings and embedding_dim must not be negative");
  if (mode != "sum" && mode != "mean" && mode != "max")
    throw Error("torch.nn.EmbeddingBag: ValueError: mode has to be one of sum, mean or max, got " +
                py_str(mode));
  weight = register_parameter("weight", normal_weight(n, dim, padding_idx));
}

std::string EmbeddingBag::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (max_norm) s += ", max_norm=" + py_float(*max_norm);
  if (norm_type != 2) s += ", norm_type=" + py_float(norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  s += ", mode=" + py_str(mode);  // repr(mode) since torch 2.x
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

Value EmbeddingBag::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.embedding_bag", args[0], Value(weight), args[1],
                  optional_value(max_norm), norm_type, scale_grad_by_freq, mode, sparse, args[2],
                  include_last_offset, optional_value(padding_idx));
}

ModulePtr EmbeddingBag::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<EmbeddingBag>(num_embeddings, embedding_dim, max_norm, norm_type, scale_grad_by_freq,
                                     mode, sparse, include_last_offset, padding_idx),
      *this, device);
}

}  // namespace fx::nn
