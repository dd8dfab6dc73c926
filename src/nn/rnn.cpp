// torch/nn/modules/rnn.py: LSTM.forward and GRU.forward for tensors (not
// PackedSequence), which call _VF.lstm / _VF.gru, ATen's lstm / gru.
#include <fx/nn/init.h>
#include <fx/nn/rnn.h>

#include <torch/nn/init.h>

#include "python_values.h"

#include <cmath>

namespace fx::nn {

using namespace detail;

RNNBase::RNNBase(std::string type_name, int64_t gates, int64_t in, int64_t hidden, int64_t layers, bool bias_,
                 bool batch_first_, double dropout_, bool bidirectional_, int64_t proj)
    : StandardModule(std::move(type_name), {"input", {"hx", Value()}}),
      input_size(in),
      hidden_size(hidden),
      num_layers(layers),
      bias(bias_),
      batch_first(batch_first_),
      dropout(dropout_),
      bidirectional(bidirectional_),
      proj_size(proj) {
  const std::string& name = this->type_name();
  if (dropout < 0 || dropout > 1)
    throw Error(name +
                ": ValueError: dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed");
  if (hidden_size <= 0) throw Error(name + ": ValueError: hidden_size must be greater than zero");
  if (num_layers <= 0) throw Error(name + ": ValueError: num_layers must be greater than zero");
  if (proj_size < 0)
    throw Error(name + ": ValueError: proj_size should be a positive integer or zero to disable projections");
  if (proj_size >= hidden_size)
    throw Error(name + ": ValueError: proj_size has to be smaller than hidden_size");
  const int64_t gate_size = gates * hidden_size;
  const int64_t real_hidden = proj_size > 0 ? proj_size : hidden_size;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    for (int64_t direction = 0; direction < num_directions(); ++direction) {
      const int64_t layer_input = layer == 0 ? input_size : real_hidden * num_directions();
      const std::string suffix = std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      flat_weights_.push_back(
          register_parameter("weight_ih_l" + suffix, torch::empty({gate_size, layer_input})));
      flat_weights_.push_back(
          register_parameter("weight_hh_l" + suffix, torch::empty({gate_size, real_hidden})));
      if (bias) {
        flat_weights_.push_back(register_parameter("bias_ih_l" + suffix, torch::empty({gate_size})));
        flat_weights_.push_back(register_parameter("bias_hh_l" + suffix, torch::empty({gate_size})));
      }
      if (proj_size > 0)
        flat_weights_.push_back(
            register_parameter("weight_hr_l" + suffix, torch::empty({proj_size, hidden_size})));
    }
  }
  const double stdv = 1.0 / std::sqrt(static_cast<double>(hidden_size));  // reset_parameters
  if (init_skipped()) return;
  torch::NoGradGuard no_grad;
  for (auto& w : flat_weights_) torch::nn::init::uniform_(w, -stdv, stdv);
}

std::string RNNBase::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (proj_size != 0) s += ", proj_size=" + std::to_string(proj_size);
  if (num_layers != 1) s += ", num_layers=" + std::to_string(num_layers);
  if (!bias) s += ", bias=False";
  if (batch_first) s += ", batch_first=True";
  if (dropout != 0) s += ", dropout=" + py_float(dropout);
  if (bidirectional) s += ", bidirectional=True";
  return s;
}

namespace {
Value weights_list(const std::vector<at::Tensor>& ws) {
  return Value::list(std::vector<Value>(ws.begin(), ws.end()));
}

// RNNBase.check_hidden_size
void check_hidden(const std::string& module, const Value& hx, const std::vector<int64_t>& expected,
                  const char* what) {
  const at::Tensor t = hx.tensor();
  if (t.sizes() != at::IntArrayRef(expected))
    throw Error(module + ": RuntimeError: Expected " + what + " size " + py_tuple(expected) + ", got " +
                c10::str(t.sizes()));
}
}  // namespace

LSTM::LSTM(int64_t in, int64_t hidden, int64_t layers, bool bias_, bool batch_first_, double dropout_,
           bool bidirectional_, int64_t proj)
    : RNNBase("torch.nn.LSTM", 4, in, hidden, layers, bias_, batch_first_, dropout_, bidirectional_, proj) {}

Value LSTM::forward(const std::vector<Value>& args) {
  Value input = args[0], hx = args[1];
  // Data-dependent, as in Python: an LSTM is a leaf and runs on concrete inputs.
  const int64_t rank = input.dim().to_int();
  if (rank != 2 && rank != 3)
    throw Error(type_name() + ": ValueError: LSTM: Expected input to be 2-D or 3-D but received " +
                std::to_string(rank) + "-D tensor");
  const bool is_batched = rank == 3;
  const int64_t batch_dim = batch_first ? 0 : 1;
  if (!is_batched) input = input.unsqueeze(batch_dim);
  const int64_t max_batch_size = input.size(batch_first ? 0 : 1).to_int();
  const int64_t real_hidden = proj_size > 0 ? proj_size : hidden_size;
  Value h, c;
  if (hx.is_none()) {
    h = fx::call("torch.zeros", num_layers * num_directions(), max_batch_size, real_hidden,
                 kw("dtype", input.dtype()), kw("device", input.device()));
    c = fx::call("torch.zeros", num_layers * num_directions(), max_batch_size, hidden_size,
                 kw("dtype", input.dtype()), kw("device", input.device()));
  } else {
    h = hx[0], c = hx[1];
    const int64_t want = is_batched ? 3 : 2;
    if (h.dim().to_int() != want || c.dim().to_int() != want)
      throw Error(type_name() + ": RuntimeError: For " + (is_batched ? "batched 3-D" : "unbatched 2-D") +
                  " input, hx and cx should also be " + std::to_string(want) + "-D");
    if (!is_batched) h = h.unsqueeze(1), c = c.unsqueeze(1);
  }
  check_hidden(type_name(), h, {num_layers * num_directions(), max_batch_size, real_hidden}, "hidden[0]");
  check_hidden(type_name(), c, {num_layers * num_directions(), max_batch_size, hidden_size}, "hidden[1]");
  Value result = fx::call("torch.lstm", input, Value::tuple({h, c}), weights_list(flat_weights_), bias,
                          num_layers, dropout, is_training(), bidirectional, batch_first);
  Value output = result[0], h_n = result[1], c_n = result[2];
  if (!is_batched) output = output.squeeze(batch_dim), h_n = h_n.squeeze(1), c_n = c_n.squeeze(1);
  return Value::tuple({output, Value::tuple({h_n, c_n})});
}

ModulePtr LSTM::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<LSTM>(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                             bidirectional, proj_size),
                      *this, device);
}

GRU::GRU(int64_t in, int64_t hidden, int64_t layers, bool bias_, bool batch_first_, double dropout_,
         bool bidirectional_)
    : RNNBase("torch.nn.GRU", 3, in, hidden, layers, bias_, batch_first_, dropout_, bidirectional_, 0) {}

Value GRU::forward(const std::vector<Value>& args) {
  Value input = args[0], hx = args[1];
  const int64_t rank = input.dim().to_int();
  if (rank != 2 && rank != 3)
    throw Error(type_name() + ": ValueError: GRU: Expected input to be 2-D or 3-D but received " +
                std::to_string(rank) + "-D tensor");
  const bool is_batched = rank == 3;
  const int64_t batch_dim = batch_first ? 0 : 1;
  if (!is_batched) {
    input = input.unsqueeze(batch_dim);
    if (!hx.is_none()) {
      if (hx.dim().to_int() != 2)
        throw Error(type_name() + ": RuntimeError: For unbatched 2-D input, hx should also be 2-D but got " +
                    std::to_string(hx.dim().to_int()) + "-D tensor");
      hx = hx.unsqueeze(1);
    }
  } else if (!hx.is_none() && hx.dim().to_int() != 3) {
    throw Error(type_name() + ": RuntimeError: For batched 3-D input, hx should also be 3-D but got " +
                std::to_string(hx.dim().to_int()) + "-D tensor");
  }
  const int64_t max_batch_size = input.size(batch_first ? 0 : 1).to_int();
  if (hx.is_none())
    hx = fx::call("torch.zeros", num_layers * num_directions(), max_batch_size, hidden_size,
                  kw("dtype", input.dtype()), kw("device", input.device()));
  check_hidden(type_name(), hx, {num_layers * num_directions(), max_batch_size, hidden_size}, "hidden");
  Value result = fx::call("torch.gru", input, hx, weights_list(flat_weights_), bias, num_layers, dropout,
                          is_training(), bidirectional, batch_first);
  Value output = result[0], hidden = result[1];
  if (!is_batched) output = output.squeeze(batch_dim), hidden = hidden.squeeze(1);
  return Value::tuple({output, hidden});
}

ModulePtr GRU::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<GRU>(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional),
      *this, device);
}

}  // namespace fx::nn
