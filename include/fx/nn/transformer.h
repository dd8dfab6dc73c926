#pragma once
// torch.nn.TransformerEncoderLayer (torch/nn/modules/transformer.py).

#include <fx/nn/attention.h>
#include <fx/nn/dropout.h>
#include <fx/nn/linear.h>
#include <fx/nn/normalization.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048,
//   dropout=0.1, activation='relu', layer_norm_eps=1e-05, batch_first=False,
//   norm_first=False); activation is 'relu' or 'gelu' (F.relu / F.gelu, not
// submodules, as in PyTorch). A leaf, as torch.fx treats every torch.nn
// module. forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False).
class TransformerEncoderLayer : public StandardModule {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048,
                          double dropout = 0.1, std::string activation = "relu",
                          double layer_norm_eps = 1e-05, bool batch_first = false, bool norm_first = false);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;
  bool norm_first;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout1, dropout2;
  std::string activation;

 private:
  Value sa_block(const Value& x, const Value& attn_mask, const Value& key_padding_mask,
                 const Value& is_causal);
  Value ff_block(const Value& x);
  int64_t d_model_, nhead_, dim_feedforward_;
  double dropout_p_, layer_norm_eps_;
  bool batch_first_;
};

}  // namespace fx::nn
