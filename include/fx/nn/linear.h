#pragma once
// torch.nn.Identity, Linear, Bilinear (torch/nn/modules/linear.py).

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.Identity(): returns its input.
class Identity : public StandardModule {
 public:
  Identity();
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

// torch.nn.Linear(in_features, out_features, bias=True): F.linear(input, weight, bias).
class Linear : public StandardModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t in_features, out_features;
  at::Tensor weight, bias;

 protected:
  Linear(std::string type_name, int64_t in_features, int64_t out_features, bool bias);
};

// torch.nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear under
// another name, MultiheadAttention's out_proj (so its repr says so).
class NonDynamicallyQuantizableLinear : public Linear {
 public:
  NonDynamicallyQuantizableLinear(int64_t in_features, int64_t out_features, bool bias = true);
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

// torch.nn.Bilinear(in1_features, in2_features, out_features, bias=True):
// forward(input1, input2) = F.bilinear(input1, input2, weight, bias), weight
// (out, in1, in2), all uniform in +-1/sqrt(in1_features).
class Bilinear : public StandardModule {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t in1_features, in2_features, out_features;
  at::Tensor weight, bias;
};

}  // namespace fx::nn
