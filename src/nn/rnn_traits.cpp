// The records of rnn.h's classes (torch/nn/modules/rnn.py). export_cpp does
// not translate them: trace through them instead.
#include <fx/nn/rnn.h>

#include "builtin_traits.h"

namespace fx::nn {

namespace {

// RNNBase's parameters; `proj_size` is LSTM's only.
template <class M>
ModuleTraits rnn(const char* type, bool with_proj_size) {
  std::vector<SpecParam> params = {
      "input_size",           "hidden_size",    {"num_layers", 1},       {"bias", true},
      {"batch_first", false}, {"dropout", 0.0}, {"bidirectional", false}};
  if (with_proj_size) params.emplace_back("proj_size", 0);
  return TraitsOf<M>{
      .type = type,
      .torch_typename = torch_modules("rnn", type),
      .params = std::move(params),
      .describe =
          [with_proj_size](const M& m) {
            Args v{m.input_size,  m.hidden_size, m.num_layers,   m.bias,
                   m.batch_first, m.dropout,     m.bidirectional};
            if (with_proj_size) v.emplace_back(m.proj_size);
            return v;
          },
      .make = [](const SpecArgs& a) -> ModulePtr {
        if constexpr (std::is_same_v<M, LSTM>)
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"),
                                     a.integer("num_layers"), a.boolean("bias"), a.boolean("batch_first"),
                                     a.real("dropout"), a.boolean("bidirectional"), a.integer("proj_size"));
        else
          return std::make_shared<M>(a.integer("input_size"), a.integer("hidden_size"),
                                     a.integer("num_layers"), a.boolean("bias"), a.boolean("batch_first"),
                                     a.real("dropout"), a.boolean("bidirectional"));
      },
      .constants =
          [mode = std::string(type).substr(9)](const M& m) {
            return ModuleConstants{{"mode", mode},
                                   {"input_size", py_int(m.input_size)},
                                   {"hidden_size", py_int(m.hidden_size)},
                                   {"num_layers", py_int(m.num_layers)},
                                   {"bias", detail::py_bool(m.bias)},
                                   {"batch_first", detail::py_bool(m.batch_first)},
                                   {"dropout", detail::py_float(m.dropout)},
                                   {"bidirectional", detail::py_bool(m.bidirectional)},
                                   {"proj_size", py_int(m.proj_size)}};
          }};
}

}  // namespace

std::vector<ModuleTraits> rnn_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(rnn<LSTM>("torch.nn.LSTM", true));
  out.push_back(rnn<GRU>("torch.nn.GRU", false));
  return out;
}

}  // namespace fx::nn
