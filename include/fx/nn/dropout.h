#pragma once
// torch.nn.Dropout, Dropout2d (torch/nn/modules/dropout.py): identity in
// eval mode, random zeroing (scaled by 1/(1-p)) in training mode.

#include <fx/nn/standard_module.h>

#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.Dropout(p=0.5, inplace=False): F.dropout(input, p, training, inplace).
class Dropout : public StandardModule {
 public:
  explicit Dropout(double p = 0.5, bool inplace = false);
  std::string extra_repr() const override;
  // In training it consumes the RNG (and, inplace, writes its input).
  Impurity impurity() const override {
    return !is_training() ? Impurity::none : inplace ? Impurity::in_place : Impurity::random;
  }
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  double p;
  bool inplace;

 protected:
  Dropout(std::string type_name, double p, bool inplace);
};

// torch.nn.Dropout2d(p=0.5, inplace=False): whole channels, F.dropout2d.
class Dropout2d : public Dropout {
 public:
  explicit Dropout2d(double p = 0.5, bool inplace = false);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

}  // namespace fx::nn
