#pragma once
// Lookup tables: torch.nn.Embedding, EmbeddingBag (torch/nn/modules/sparse.py).

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx=None,
//   max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False).
// A negative padding_idx counts from the end and is stored normalized; the
// padding row starts at zero. With max_norm, forward renormalizes the looked
// up rows of weight in place, as PyTorch does.
class Embedding : public StandardModule {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
            bool scale_grad_by_freq = false, bool sparse = false);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq, sparse;
  at::Tensor weight;
};

// torch.nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm=None,
//   norm_type=2.0, scale_grad_by_freq=False, mode='mean', sparse=False,
//   include_last_offset=False, padding_idx=None) (PyTorch's `_weight`
// argument aside); forward(input, offsets=None, per_sample_weights=None).
class EmbeddingBag : public StandardModule {
 public:
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm = std::nullopt,
               double norm_type = 2.0, bool scale_grad_by_freq = false, std::string mode = "mean",
               bool sparse = false, bool include_last_offset = false,
               std::optional<int64_t> padding_idx = std::nullopt);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq;
  std::string mode;
  bool sparse, include_last_offset;
  std::optional<int64_t> padding_idx;
  at::Tensor weight;
};

}  // namespace fx::nn
