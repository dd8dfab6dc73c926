#pragma once
// Recurrent layers: torch.nn.LSTM, GRU (torch/nn/modules/rnn.py), run by
// ATen's lstm / gru kernels on PyTorch's flat weights.

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.modules.rnn.RNNBase: per layer and direction the parameters
// weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (when
// bias) and weight_hr_l{k} (LSTM with proj_size), all uniform in
// +-1/sqrt(hidden_size). Inputs are (L, N, H_in), (N, L, H_in) when
// batch_first, or unbatched (L, H_in).
class RNNBase : public StandardModule {
 public:
  std::string extra_repr() const override;
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  double dropout;
  bool bidirectional;
  int64_t proj_size;
  // The parameters in PyTorch's order (_flat_weights).
  const std::vector<at::Tensor>& flat_weights() const { return flat_weights_; }

 protected:
  RNNBase(std::string type_name, int64_t gates, int64_t input_size, int64_t hidden_size, int64_t num_layers,
          bool bias, bool batch_first, double dropout, bool bidirectional, int64_t proj_size);
  int64_t num_directions() const { return bidirectional ? 2 : 1; }
  std::vector<at::Tensor> flat_weights_;
};

// torch.nn.LSTM(input_size, hidden_size, num_layers=1, bias=True,
//   batch_first=False, dropout=0.0, bidirectional=False, proj_size=0).
// forward(input, hx=None) returns (output, (h_n, c_n)); hx is a tuple (h_0, c_0).
class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true,
       bool batch_first = false, double dropout = 0.0, bool bidirectional = false, int64_t proj_size = 0);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

// torch.nn.GRU(input_size, hidden_size, num_layers=1, bias=True,
//   batch_first=False, dropout=0.0, bidirectional=False).
// forward(input, hx=None) returns (output, h_n).
class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true,
      bool batch_first = false, double dropout = 0.0, bool bidirectional = false);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

}  // namespace fx::nn
