// The entries of module_spec_types.cpp's table for recurrent layers,
// attention and the transformer.
#include <fx/error.h>
#include <fx/nn.h>

#include "module_spec_types.h"

namespace fx::detail {
namespace {

template <class M>
SpecType spec_rnn(const char* type, bool with_proj_size) {
  std::vector<SpecParam> params = {
      "input_size",           "hidden_size",    {"num_layers", 1},       {"bias", true},
      {"batch_first", false}, {"dropout", 0.0}, {"bidirectional", false}};
  if (with_proj_size) params.emplace_back("proj_size", 0);
  return spec_leaf<M>(
      type, std::move(params),
      [with_proj_size](const M& m) {
        Args v{m.input_size, m.hidden_size, m.num_layers, m.bias, m.batch_first, m.dropout, m.bidirectional};
        if (with_proj_size) v.emplace_back(m.proj_size);
        return v;
      },
      [](const SpecArgs& a) -> nn::ModulePtr {
        if constexpr (std::is_same_v<M, nn::LSTM>)
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"),
                                     a.integer("num_layers"), a.boolean("bias"), a.boolean("batch_first"),
                                     a.real("dropout"), a.boolean("bidirectional"), a.integer("proj_size"));
        else
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"),
                                     a.integer("num_layers"), a.boolean("bias"), a.boolean("batch_first"),
                                     a.real("dropout"), a.boolean("bidirectional"));
      });
}

}  // namespace

std::vector<SpecType> sequence_spec_types() {
  using namespace nn;
  return {
      // attention.h: bias and add_bias_kv are flags here, tensors (or None) on the module.
      spec_leaf<MultiheadAttention>(
          "torch.nn.MultiheadAttention",
          {"embed_dim",
           "num_heads",
           {"dropout", 0.0},
           {"bias", true},
           {"add_bias_kv", false},
           {"add_zero_attn", false},
           {"kdim", None},
           {"vdim", None},
           {"batch_first", false}},
          [](const MultiheadAttention& m) {
            return Args{m.embed_dim,        m.num_heads,     m.dropout, m.in_proj_bias.defined(),
                        m.bias_k.defined(), m.add_zero_attn, m.kdim,    m.vdim,
                        m.batch_first};
          },
          [](const SpecArgs& a) {
            return std::make_shared<MultiheadAttention>(
                a.integer("embed_dim"), a.integer("num_heads"), a.real("dropout"), a.boolean("bias"),
                a.boolean("add_bias_kv"), a.boolean("add_zero_attn"), a.optional_integer("kdim"),
                a.optional_integer("vdim"), a.boolean("batch_first"));
          }),
      // rnn.h
      spec_rnn<LSTM>("torch.nn.LSTM", true),
      spec_rnn<GRU>("torch.nn.GRU", false),
      // transformer.h: PyTorch keeps most arguments only in the children, so both sides read them there
      // (torch 2.x's `bias` from linear1, which it is handed to with the other linears and the norms).
      spec_leaf<TransformerEncoderLayer>(
          "torch.nn.TransformerEncoderLayer",
          {"d_model",
           "nhead",
           {"dim_feedforward", 2048},
           {"dropout", 0.1},
           {"activation", "relu"},
           {"layer_norm_eps", 1e-05},
           {"batch_first", false},
           {"norm_first", false},
           {"bias", true}},
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
          [](const SpecArgs& a) {
            spec_require_bias(a, "torch.nn.TransformerEncoderLayer", true);
            return std::make_shared<TransformerEncoderLayer>(
                a.integer("d_model"), a.integer("nhead"), a.integer("dim_feedforward"), a.real("dropout"),
                a.str("activation"), a.real("layer_norm_eps"), a.boolean("batch_first"),
                a.boolean("norm_first"));
          }),
  };
}

}  // namespace fx::detail
