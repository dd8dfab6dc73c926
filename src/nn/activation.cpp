// torch/nn/modules/activation.py: each forward is the F.* / torch.* call of
// PyTorch's, positional and keyword arguments alike.
#include <fx/nn/activation.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

namespace {
std::string inplace_repr(bool inplace) { return inplace ? "inplace=True" : ""; }
}  // namespace

ReLU::ReLU(bool inplace_) : StandardModule("torch.nn.ReLU", {"input"}), inplace(inplace_) {}
std::string ReLU::extra_repr() const { return inplace_repr(inplace); }
Value ReLU::forward(const std::vector<Value>& args) {
  return fx::call(kF + "relu", args[0], kw("inplace", inplace));
}
ModulePtr ReLU::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<ReLU>(inplace), *this, device);
}

ReLU6::ReLU6(bool inplace_) : StandardModule("torch.nn.ReLU6", {"input"}), inplace(inplace_) {}
std::string ReLU6::extra_repr() const { return inplace_repr(inplace); }
Value ReLU6::forward(const std::vector<Value>& args) {  // Hardtanh.forward
  return fx::call(kF + "hardtanh", args[0], min_val, max_val, inplace);
}
ModulePtr ReLU6::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<ReLU6>(inplace), *this, device);
}

LeakyReLU::LeakyReLU(double slope, bool inplace_)
    : StandardModule("torch.nn.LeakyReLU", {"input"}), negative_slope(slope), inplace(inplace_) {}
std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + py_float(negative_slope) + (inplace ? ", inplace=True" : "");
}
Value LeakyReLU::forward(const std::vector<Value>& args) {
  return fx::call(kF + "leaky_relu", args[0], negative_slope, inplace);
}
ModulePtr LeakyReLU::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<LeakyReLU>(negative_slope, inplace), *this, device);
}

GELU::GELU(std::string approximate_)
    : StandardModule("torch.nn.GELU", {"input"}), approximate(std::move(approximate_)) {
  if (approximate != "none" && approximate != "tanh")
    throw Error("torch.nn.GELU: approximate must be 'none' or 'tanh', got " + py_str(approximate));
}
std::string GELU::extra_repr() const { return "approximate=" + py_str(approximate); }
Value GELU::forward(const std::vector<Value>& args) {
  return fx::call(kF + "gelu", args[0], kw("approximate", approximate));
}
ModulePtr GELU::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<GELU>(approximate), *this, device);
}

SiLU::SiLU(bool inplace_) : StandardModule("torch.nn.SiLU", {"input"}), inplace(inplace_) {}
std::string SiLU::extra_repr() const { return inplace_repr(inplace); }
Value SiLU::forward(const std::vector<Value>& args) {
  return fx::call(kF + "silu", args[0], kw("inplace", inplace));
}
ModulePtr SiLU::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<SiLU>(inplace), *this, device);
}

Mish::Mish(bool inplace_) : StandardModule("torch.nn.Mish", {"input"}), inplace(inplace_) {}
std::string Mish::extra_repr() const { return inplace_repr(inplace); }
Value Mish::forward(const std::vector<Value>& args) {
  return fx::call(kF + "mish", args[0], kw("inplace", inplace));
}
ModulePtr Mish::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Mish>(inplace), *this, device);
}

Hardswish::Hardswish(bool inplace_) : StandardModule("torch.nn.Hardswish", {"input"}), inplace(inplace_) {}
std::string Hardswish::extra_repr() const { return ""; }
Value Hardswish::forward(const std::vector<Value>& args) {
  return fx::call(kF + "hardswish", args[0], inplace);
}
ModulePtr Hardswish::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Hardswish>(inplace), *this, device);
}

Hardsigmoid::Hardsigmoid(bool inplace_)
    : StandardModule("torch.nn.Hardsigmoid", {"input"}), inplace(inplace_) {}
std::string Hardsigmoid::extra_repr() const { return ""; }
Value Hardsigmoid::forward(const std::vector<Value>& args) {
  return fx::call(kF + "hardsigmoid", args[0], inplace);
}
ModulePtr Hardsigmoid::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Hardsigmoid>(inplace), *this, device);
}

Sigmoid::Sigmoid() : StandardModule("torch.nn.Sigmoid", {"input"}) {}
std::string Sigmoid::extra_repr() const { return ""; }
Value Sigmoid::forward(const std::vector<Value>& args) { return fx::call("torch.sigmoid", args[0]); }
ModulePtr Sigmoid::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Sigmoid>(), *this, device);
}

Tanh::Tanh() : StandardModule("torch.nn.Tanh", {"input"}) {}
std::string Tanh::extra_repr() const { return ""; }
Value Tanh::forward(const std::vector<Value>& args) { return fx::call("torch.tanh", args[0]); }
ModulePtr Tanh::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Tanh>(), *this, device);
}

Softmax::Softmax(std::optional<int64_t> dim_) : StandardModule("torch.nn.Softmax", {"input"}), dim(dim_) {}
std::string Softmax::extra_repr() const { return "dim=" + py_optional(dim); }
Value Softmax::forward(const std::vector<Value>& args) {
  return fx::call(kF + "softmax", args[0], optional_value(dim), kw("_stacklevel", 5));
}
ModulePtr Softmax::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Softmax>(dim), *this, device);
}

LogSoftmax::LogSoftmax(std::optional<int64_t> dim_)
    : StandardModule("torch.nn.LogSoftmax", {"input"}), dim(dim_) {}
std::string LogSoftmax::extra_repr() const { return "dim=" + py_optional(dim); }
Value LogSoftmax::forward(const std::vector<Value>& args) {
  return fx::call(kF + "log_softmax", args[0], optional_value(dim), kw("_stacklevel", 5));
}
ModulePtr LogSoftmax::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<LogSoftmax>(dim), *this, device);
}

}  // namespace fx::nn
