// torch/nn/modules/transformer.py: TransformerEncoderLayer.forward without
// its fast path (which computes the same in eval mode).
#include <fx/nn/transformer.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                 double p, std::string activation_, double layer_norm_eps,
                                                 bool batch_first, bool norm_first_)
    : StandardModule("torch.nn.TransformerEncoderLayer",
                     {"src", {"src_mask", Value()}, {"src_key_padding_mask", Value()}, {"is_causal", false}}),
      norm_first(norm_first_),
      activation(std::move(activation_)),
      d_model_(d_model),
      nhead_(nhead),
      dim_feedforward_(dim_feedforward),
      dropout_p_(p),
      layer_norm_eps_(layer_norm_eps),
      batch_first_(batch_first) {
  if (activation != "relu" && activation != "gelu")
    throw Error("torch.nn.TransformerEncoderLayer: RuntimeError: activation should be relu/gelu, not " +
                activation);
  // Registered in PyTorch's order, so repr and state dict list them alike.
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(d_model, nhead, p, true, false, false, std::nullopt,
                                                        std::nullopt, batch_first));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  linear2 = register_module("linear2", std::make_shared<Linear>(dim_feedforward, d_model));
  norm1 =
      register_module("norm1", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, layer_norm_eps));
  norm2 =
      register_module("norm2", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(p));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(p));
}

Value TransformerEncoderLayer::sa_block(const Value& x, const Value& attn_mask, const Value& key_padding_mask,
                                        const Value& is_causal) {
  Value y = (*self_attn)(x, x, x, kw("attn_mask", attn_mask), kw("key_padding_mask", key_padding_mask),
                         kw("need_weights", false), kw("is_causal", is_causal))[0];
  return (*dropout1)(y);
}

Value TransformerEncoderLayer::ff_block(const Value& x) {
  Value y = fx::call("torch.nn.functional." + activation, (*linear1)(x));
  return (*dropout2)((*linear2)((*dropout)(y)));
}

Value TransformerEncoderLayer::forward(const std::vector<Value>& args) {
  Value x = args[0];
  const std::string module = "torch.nn.TransformerEncoderLayer";
  Value key_padding_mask = canonical_mask(module, args[2], "src_key_padding_mask", x);
  Value mask = canonical_mask(module, args[1], "src_mask", x);
  if (norm_first) {
    x = x + sa_block((*norm1)(x), mask, key_padding_mask, args[3]);
    x = x + ff_block((*norm2)(x));
  } else {
    x = (*norm1)(x + sa_block(x, mask, key_padding_mask, args[3]));
    x = (*norm2)(x + ff_block(x));
  }
  return x;
}

ModulePtr TransformerEncoderLayer::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<TransformerEncoderLayer>(d_model_, nhead_, dim_feedforward_, dropout_p_, activation,
                                                layer_norm_eps_, batch_first_, norm_first),
      *this, device);
}

}  // namespace fx::nn
