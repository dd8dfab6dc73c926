// torch.nn.MultiheadAttention (torch/nn/modules/activation.py) of torch
// 2.14, the path through F.multi_head_attention_forward (the fast path
// computes the same).
#include <fx/nn/attention.h>
#include <fx/nn/init.h>

#include <torch/nn/init.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

MultiheadAttention::MultiheadAttention(int64_t embed_dim_, int64_t num_heads_, double dropout_, bool bias,
                                       bool add_bias_kv, bool add_zero_attn_, std::optional<int64_t> kdim_,
                                       std::optional<int64_t> vdim_, bool batch_first_)
    : StandardModule("torch.nn.MultiheadAttention", {"query",
                                                     "key",
                                                     "value",
                                                     {"key_padding_mask", Value()},
                                                     {"need_weights", true},
                                                     {"attn_mask", Value()},
                                                     {"average_attn_weights", true},
                                                     {"is_causal", false}}),
      embed_dim(embed_dim_),
      kdim(kdim_.value_or(embed_dim_)),
      vdim(vdim_.value_or(embed_dim_)),
      num_heads(num_heads_),
      head_dim(num_heads_ > 0 ? embed_dim_ / num_heads_ : 0),
      dropout(dropout_),
      batch_first(batch_first_),
      add_zero_attn(add_zero_attn_) {
  if (embed_dim <= 0 || num_heads <= 0 || head_dim * num_heads != embed_dim)
    throw Error("torch.nn.MultiheadAttention: AssertionError: embed_dim (" + std::to_string(embed_dim) +
                ") must be divisible by num_heads (" + std::to_string(num_heads) + ")");
  torch::NoGradGuard no_grad;
  // Registered in PyTorch's order, so the state dict lists them alike.
  if (!qkv_same_embed_dim()) {
    q_proj_weight = register_parameter("q_proj_weight", torch::empty({embed_dim, embed_dim}));
    k_proj_weight = register_parameter("k_proj_weight", torch::empty({embed_dim, kdim}));
    v_proj_weight = register_parameter("v_proj_weight", torch::empty({embed_dim, vdim}));
    if (!init_skipped())
      for (auto* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) torch::nn::init::xavier_uniform_(*w);
  } else {
    in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * embed_dim, embed_dim}));
    if (!init_skipped()) torch::nn::init::xavier_uniform_(in_proj_weight);
  }
  if (bias) in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * embed_dim}));
  out_proj = register_module("out_proj",
                             std::make_shared<NonDynamicallyQuantizableLinear>(embed_dim, embed_dim, bias));
  if (bias) out_proj->bias.zero_();
  if (add_bias_kv) {
    bias_k = register_parameter("bias_k", torch::empty({1, 1, embed_dim}));
    bias_v = register_parameter("bias_v", torch::empty({1, 1, embed_dim}));
    if (!init_skipped()) {
      torch::nn::init::xavier_normal_(bias_k);
      torch::nn::init::xavier_normal_(bias_v);
    }
  }
}

Value MultiheadAttention::forward(const std::vector<Value>& args) {
  Value query = args[0], key = args[1], value = args[2];
  const std::string module = "torch.nn.MultiheadAttention";
  const bool transpose = batch_first && static_cast<bool>(query.dim() == 3);
  Value key_padding_mask = canonical_mask(module, args[3], "key_padding_mask", query);
  Value attn_mask = canonical_mask(module, args[5], "attn_mask", query);
  if (transpose) {
    // As in Python, one transpose where they are the same tensor, so that
    // F.multi_head_attention_forward still sees self-attention (one packed
    // projection) or a shared key and value.
    if (same_object(key, value)) {
      if (same_object(query, key)) {
        query = key = value = query.transpose(1, 0);
      } else {
        query = query.transpose(1, 0);
        key = value = key.transpose(1, 0);
      }
    } else {
      query = query.transpose(1, 0);
      key = key.transpose(1, 0);
      value = value.transpose(1, 0);
    }
  }
  std::vector<Value> pos{query,
                         key,
                         value,
                         embed_dim,
                         num_heads,
                         optional_tensor(in_proj_weight),
                         optional_tensor(in_proj_bias),
                         optional_tensor(bias_k),
                         optional_tensor(bias_v),
                         add_zero_attn,
                         dropout,
                         Value(out_proj->weight),
                         optional_tensor(out_proj->bias)};
  ValueKwargs kwargs{{"training", is_training()},
                     {"key_padding_mask", key_padding_mask},
                     {"need_weights", args[4]},
                     {"attn_mask", attn_mask}};
  if (!qkv_same_embed_dim()) {
    kwargs.emplace_back("use_separate_proj_weight", true);
    kwargs.emplace_back("q_proj_weight", Value(q_proj_weight));
    kwargs.emplace_back("k_proj_weight", Value(k_proj_weight));
    kwargs.emplace_back("v_proj_weight", Value(v_proj_weight));
  }
  kwargs.emplace_back("average_attn_weights", args[6]);
  kwargs.emplace_back("is_causal", args[7]);
  Value result = fx::call_function("torch.nn.functional.multi_head_attention_forward", std::move(pos),
                                   std::move(kwargs));
  Value output = result[0], weights = result[1];
  return Value::tuple({transpose ? output.transpose(1, 0) : output, weights});
}

ModulePtr MultiheadAttention::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<MultiheadAttention>(embed_dim, num_heads, dropout, in_proj_bias.defined(),
                                           bias_k.defined(), add_zero_attn, kdim, vdim, batch_first),
      *this, device);
}

}  // namespace fx::nn
