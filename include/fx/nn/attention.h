#pragma once
// torch.nn.MultiheadAttention (torch/nn/modules/activation.py).

#include <fx/nn/linear.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
//   add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False)
//
// forward(query, key, value, key_padding_mask=None, need_weights=True,
//         attn_mask=None, average_attn_weights=True, is_causal=False)
// returns the tuple (attn_output, attn_weights), attn_weights None unless
// need_weights. Parameters as PyTorch names them: in_proj_weight (or
// q/k/v_proj_weight when kdim or vdim differ from embed_dim), in_proj_bias,
// bias_k, bias_v, out_proj.weight, out_proj.bias.
class MultiheadAttention : public StandardModule {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool add_bias_kv = false, bool add_zero_attn = false,
                     std::optional<int64_t> kdim = std::nullopt, std::optional<int64_t> vdim = std::nullopt,
                     bool batch_first = false);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;

  int64_t embed_dim, kdim, vdim, num_heads, head_dim;
  double dropout;
  bool batch_first, add_zero_attn;
  at::Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  std::shared_ptr<NonDynamicallyQuantizableLinear> out_proj;

 private:
  bool qkv_same_embed_dim() const { return kdim == embed_dim && vdim == embed_dim; }
};

}  // namespace fx::nn
