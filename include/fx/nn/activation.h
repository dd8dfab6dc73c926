#pragma once
// Element-wise activations and softmaxes (torch/nn/modules/activation.py),
// each forward the F.* / torch.* call PyTorch's makes, with the same
// arguments, so tracing through one records what torch.fx records.

#include <fx/nn/standard_module.h>

#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

#define FX_NN_ACTIVATION_MEMBERS                          \
  std::string extra_repr() const override;                \
  Value forward(const std::vector<Value>& args) override; \
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;

// torch.nn.ReLU(inplace=False): F.relu(input, inplace=inplace).
class ReLU : public StandardModule {
 public:
  explicit ReLU(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  bool inplace;
};

// torch.nn.ReLU6(inplace=False): a Hardtanh(0., 6.): F.hardtanh(input, 0.0, 6.0, inplace).
class ReLU6 : public StandardModule {
 public:
  explicit ReLU6(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  double min_val = 0.0, max_val = 6.0;
  bool inplace;
};

// torch.nn.LeakyReLU(negative_slope=0.01, inplace=False).
class LeakyReLU : public StandardModule {
 public:
  explicit LeakyReLU(double negative_slope = 0.01, bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  double negative_slope;
  bool inplace;
};

// torch.nn.GELU(approximate='none'), 'tanh' for the tanh approximation.
class GELU : public StandardModule {
 public:
  explicit GELU(std::string approximate = "none");
  FX_NN_ACTIVATION_MEMBERS
  std::string approximate;
};

// torch.nn.SiLU(inplace=False), Mish(inplace=False), Hardswish(inplace=False),
// Hardsigmoid(inplace=False). Hardswish and Hardsigmoid print no inplace flag,
// as in PyTorch 2.14.
class SiLU : public StandardModule {
 public:
  explicit SiLU(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  bool inplace;
};
class Mish : public StandardModule {
 public:
  explicit Mish(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  bool inplace;
};
class Hardswish : public StandardModule {
 public:
  explicit Hardswish(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  bool inplace;
};
class Hardsigmoid : public StandardModule {
 public:
  explicit Hardsigmoid(bool inplace = false);
  FX_NN_ACTIVATION_MEMBERS
  bool inplace;
};

// torch.nn.Sigmoid(), Tanh(): torch.sigmoid / torch.tanh.
class Sigmoid : public StandardModule {
 public:
  Sigmoid();
  FX_NN_ACTIVATION_MEMBERS
};
class Tanh : public StandardModule {
 public:
  Tanh();
  FX_NN_ACTIVATION_MEMBERS
};

// torch.nn.Softmax(dim=None), LogSoftmax(dim=None): F.softmax(input, dim,
// _stacklevel=5); a dim of None picks one as F._get_softmax_dim does.
class Softmax : public StandardModule {
 public:
  explicit Softmax(std::optional<int64_t> dim = std::nullopt);
  FX_NN_ACTIVATION_MEMBERS
  std::optional<int64_t> dim;
};
class LogSoftmax : public StandardModule {
 public:
  explicit LogSoftmax(std::optional<int64_t> dim = std::nullopt);
  FX_NN_ACTIVATION_MEMBERS
  std::optional<int64_t> dim;
};

#undef FX_NN_ACTIVATION_MEMBERS

}  // namespace fx::nn
