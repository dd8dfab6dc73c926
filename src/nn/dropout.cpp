// torch/nn/modules/dropout.py
#include <fx/nn/dropout.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

Dropout::Dropout(double p_, bool inplace_) : Dropout("torch.nn.Dropout", p_, inplace_) {}

Dropout::Dropout(std::string type_name, double p_, bool inplace_)
    : StandardModule(std::move(type_name), {"input"}), p(p_), inplace(inplace_) {
  if (p < 0.0 || p > 1.0)
    throw Error(this->type_name() + ": dropout probability has to be between 0 and 1, but got " +
                py_float(p));
}

std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=" + py_bool(inplace); }

Value Dropout::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.dropout", args[0], p, is_training(), inplace);
}

ModulePtr Dropout::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Dropout>(p, inplace), *this, device);
}

Dropout2d::Dropout2d(double p_, bool inplace_) : Dropout("torch.nn.Dropout2d", p_, inplace_) {}

Value Dropout2d::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.dropout2d", args[0], p, is_training(), inplace);
}

ModulePtr Dropout2d::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Dropout2d>(p, inplace), *this, device);
}

}  // namespace fx::nn
