// The record of attention.h's MultiheadAttention
// (torch/nn/modules/activation.py). bias and add_bias_kv are flags of the
// constructor and tensors (or None) on the module.
#include <fx/nn/attention.h>

#include "builtin_traits.h"

namespace fx::nn {

namespace {

// torch.nn.MultiheadAttention.forward: F.multi_head_attention_forward on
// (sequence, batch, feature) inputs, transposed around it when batch_first.
// forward's parameters: query, key, value, key_padding_mask, need_weights,
// attn_mask, average_attn_weights.
CppCall emit_attention(CppModuleCall& w, const MultiheadAttention& a) {
  std::string q = w.tensor_argument(0), k = w.tensor_argument(1), v = w.tensor_argument(2);
  auto key_padding_mask = w.argument(3), need_weights = w.argument(4), attn_mask = w.argument(5),
       average = w.argument(6);
  auto seq_first = [&](const std::string& x) { return a.batch_first ? x + ".transpose(1, 0)" : x; };
  std::vector<std::string> ws;
  ws.push_back(w.weight_or_none(a.in_proj_weight, "in_proj_weight"));
  ws.push_back(w.weight_or_none(a.in_proj_bias, "in_proj_bias"));
  ws.push_back(w.weight_or_none(a.bias_k, "bias_k"));
  ws.push_back(w.weight_or_none(a.bias_v, "bias_v"));
  ws.push_back(w.weight("out_proj.weight"));
  ws.push_back(w.weight_or_none(a.out_proj->bias, "out_proj.bias"));
  std::string options =
      "torch::nn::functional::MultiheadAttentionForwardFuncOptions(" + std::to_string(a.embed_dim) + ", " +
      std::to_string(a.num_heads) + ", " + ws[0] + ", " + ws[1] + ", " + ws[2] + ", " + ws[3] + ", " +
      CppModuleCall::boolean(a.add_zero_attn) + ", " + w.real(a.dropout) + ", " + ws[4] + ", " + ws[5] + ")";
  options += "\n          .training(" + CppModuleCall::boolean(a.is_training()) + ")";
  if (key_padding_mask) options += ".key_padding_mask(" + *key_padding_mask + ")";
  if (need_weights) options += ".need_weights(" + *need_weights + ")";
  if (attn_mask) options += ".attn_mask(" + *attn_mask + ")";
  if (average) options += ".average_attn_weights(" + *average + ")";
  if (!a.in_proj_weight.defined()) {
    std::string q_w = w.weight("q_proj_weight"), k_w = w.weight("k_proj_weight"),
                v_w = w.weight("v_proj_weight");
    options += ".use_separate_proj_weight(true).q_proj_weight(" + q_w + ").k_proj_weight(" + k_w +
               ").v_proj_weight(" + v_w + ")";
  }
  std::string call = "torch::nn::functional::multi_head_attention_forward(\n      " + seq_first(q) + ", " +
                     seq_first(k) + ", " + seq_first(v) + ",\n      " + options + ")";
  if (!a.batch_first) return CppCall{call, 2};
  std::string tmp = w.temp("seq_first");
  w.line("auto " + tmp + " = " + call + ";");
  return CppCall{"std::make_tuple(std::get<0>(" + tmp + ").transpose(1, 0), std::get<1>(" + tmp + "))", 2};
}

}  // namespace

std::vector<ModuleTraits> attention_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(TraitsOf<MultiheadAttention>{
      .type = "torch.nn.MultiheadAttention",
      .torch_typename = torch_modules("activation", "MultiheadAttention"),
      .params = {"embed_dim",
                 "num_heads",
                 {"dropout", 0.0},
                 {"bias", true},
                 {"add_bias_kv", false},
                 {"add_zero_attn", false},
                 {"kdim", None},
                 {"vdim", None},
                 {"batch_first", false}},
      .describe =
          [](const MultiheadAttention& m) {
            return Args{m.embed_dim,        m.num_heads,     m.dropout, m.in_proj_bias.defined(),
                        m.bias_k.defined(), m.add_zero_attn, m.kdim,    m.vdim,
                        m.batch_first};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<MultiheadAttention>(
                a.integer("embed_dim"), a.integer("num_heads"), a.real("dropout"), a.boolean("bias"),
                a.boolean("add_bias_kv"), a.boolean("add_zero_attn"), a.optional_integer("kdim"),
                a.optional_integer("vdim"), a.boolean("batch_first"));
          },
      .constants =
          [](const MultiheadAttention& m) {
            return ModuleConstants{{"batch_first", detail::py_bool(m.batch_first)}};
          },
      .emit_cpp = emit_attention});
  return out;
}

}  // namespace fx::nn
