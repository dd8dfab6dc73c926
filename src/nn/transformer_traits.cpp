// The record of transformer.h's TransformerEncoderLayer
// (torch/nn/modules/transformer.py). PyTorch keeps most of its arguments only
// in the children, so both fxcpp and python/fxcpp/modules.py read them there
// (torch 2.x's `bias` from linear1, to which it is handed with the other
// linears and the norms).
#include <fx/nn/transformer.h>

#include "builtin_traits.h"

namespace fx::nn {

std::vector<ModuleTraits> transformer_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(TraitsOf<TransformerEncoderLayer>{
      .type = "torch.nn.TransformerEncoderLayer",
      .torch_typename = torch_modules("transformer", "TransformerEncoderLayer"),
      .params = {"d_model",
                 "nhead",
                 {"dim_feedforward", 2048},
                 {"dropout", 0.1},
                 {"activation", "relu"},
                 {"layer_norm_eps", 1e-05},
                 {"batch_first", false},
                 {"norm_first", false},
                 {"bias", true}},
      .describe =
          [](const TransformerEncoderLayer& m) {
            return Args{m.self_attn->embed_dim,
                        m.self_attn->num_heads,
                        m.linear1->out_features,
                        m.dropout->p,
                        m.activation,
                        m.norm1->eps,
                        m.self_attn->batch_first,
                        m.norm_first,
                        m.linear1->bias.defined()};
          },
      .make =
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.TransformerEncoderLayer", true);
            return std::make_shared<TransformerEncoderLayer>(
                a.integer("d_model"), a.integer("nhead"), a.integer("dim_feedforward"), a.real("dropout"),
                a.str("activation"), a.real("layer_norm_eps"), a.boolean("batch_first"),
                a.boolean("norm_first"));
          },
      .constants =
          [](const TransformerEncoderLayer& m) {
            return ModuleConstants{{"norm_first", detail::py_bool(m.norm_first)}};
          }});
  return out;
}

}  // namespace fx::nn
