// torch/nn/modules/linear.py
#include <fx/nn/init.h>
#include <fx/nn/linear.h>

#include <torch/nn/init.h>

#include "python_values.h"

#include <cmath>

namespace fx::nn {

using namespace detail;

Identity::Identity() : StandardModule("torch.nn.Identity", {"input"}) {}
Value Identity::forward(const std::vector<Value>& args) { return args[0]; }
ModulePtr Identity::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Identity>(), *this, device);
}

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Linear("torch.nn.Linear", in, out, with_bias) {}

// Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)), bias uniform in +-1/sqrt(fan_in).
Linear::Linear(std::string type_name, int64_t in, int64_t out, bool with_bias)
    : StandardModule(std::move(type_name), {"input"}), in_features(in), out_features(out) {
  if (in < 0 || out < 0)
    throw Error(this->type_name() + ": in_features and out_features must not be negative");
  weight = register_parameter("weight", torch::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
  if (init_skipped()) return;
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

Value Linear::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.linear", args[0], Value(weight), optional_tensor(bias));
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + py_bool(bias.defined());
}

ModulePtr Linear::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Linear>(in_features, out_features, bias.defined()), *this, device);
}

NonDynamicallyQuantizableLinear::NonDynamicallyQuantizableLinear(int64_t in, int64_t out, bool with_bias)
    : Linear("torch.nn.modules.linear.NonDynamicallyQuantizableLinear", in, out, with_bias) {}

ModulePtr NonDynamicallyQuantizableLinear::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<NonDynamicallyQuantizableLinear>(in_features, out_features, bias.defined()), *this,
      device);
}

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : StandardModule("torch.nn.Bilinear", {"input1", "input2"}),
      in1_features(in1),
      in2_features(in2),
      out_features(out) {
  if (in1 < 0 || in2 < 0 || out < 0) throw Error("torch.nn.Bilinear: feature sizes must not be negative");
  weight = register_parameter("weight", torch::empty({out, in1, in2}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
  // Bilinear.reset_parameters
  if (init_skipped()) return;
  const double bound = in1 > 0 ? 1.0 / std::sqrt(static_cast<double>(in1)) : 0.0;
  torch::NoGradGuard no_grad;
  torch::nn::init::uniform_(weight, -bound, bound);
  if (bias.defined()) torch::nn::init::uniform_(bias, -bound, bound);
}

Value Bilinear::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.bilinear", args[0], args[1], Value(weight), optional_tensor(bias));
}

std::string Bilinear::extra_repr() const {
  return "in1_features=" + std::to_string(in1_features) + ", in2_features=" + std::to_string(in2_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

ModulePtr Bilinear::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Bilinear>(in1_features, in2_features, out_features, bias.defined()),
                      *this, device);
}

}  // namespace fx::nn
