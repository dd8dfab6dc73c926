// The pooling modules, written as torch/nn/modules/pooling.py writes them:
// the arguments are kept as given (int or tuple) and handed to F.* as such.
#include <fx/nn/pooling.h>

#include <utility>

#include "python_values.h"

namespace fx::nn {

namespace {

using detail::py_bool;

// A config check failed: the module, the argument and what PyTorch accepts.
[[noreturn]] void bad_arg(const std::string& module, const std::string& what, const PoolArg& arg,
                          const std::string& expected) {
  throw Error(module + ": " + what + " must be " + expected + ", got " + arg.str());
}
}  // namespace

Value PoolArg::value() const {
  auto item = [](const std::optional<int64_t>& v) { return v ? Value(*v) : Value(); };
  if (is_int_) return item(items_[0]);
  std::vector<Value> values;
  values.reserve(items_.size());
  for (const auto& v : items_) values.push_back(item(v));
  return Value::tuple(std::move(values));
}

std::string PoolArg::str() const {
  auto item = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
  if (is_int_) return item(items_[0]);
  std::string out = "(";
  for (size_t i = 0; i < items_.size(); ++i) out += (i ? ", " : "") + item(items_[i]);
  return out + (items_.size() == 1 ? ",)" : ")");
}

void PoolArg::check(const std::string& module, const std::string& what, size_t n, int64_t min_value,
                    bool allow_none) const {
  std::string expected =
      "an int or a tuple of " + std::to_string(n) + (allow_none ? " ints or None" : " ints");
  if (min_value > 0) expected += ", each positive";
  if (min_value == 0) expected += ", each non-negative";
  if (!is_int_ && items_.size() != n) bad_arg(module, what, *this, expected);
  for (const auto& v : items_) {
    if (!v ? !allow_none : *v < min_value) bad_arg(module, what, *this, expected);
  }
}

// ---- MaxPool1d / MaxPool2d --------------------------------------------------

MaxPoolNd::MaxPoolNd(int dims, PoolArg kernel, std::optional<PoolArg> stride_, PoolArg padding_,
                     PoolArg dilation_, bool return_indices_, bool ceil_mode_)
    : StandardModule("torch.nn.MaxPool" + std::to_string(dims) + "d", {"input"}),
      kernel_size(kernel),
      stride(stride_.value_or(kernel)),
      padding(std::move(padding_)),
      dilation(std::move(dilation_)),
      return_indices(return_indices_),
      ceil_mode(ceil_mode_),
      dims_(dims) {
  const std::string name = "MaxPool" + std::to_string(dims) + "d";
  const auto n = static_cast<size_t>(dims);
  kernel_size.check(name, "kernel_size", n, 1);
  stride.check(name, "stride", n, 1);
  padding.check(name, "padding", n, 0);
  dilation.check(name, "dilation", n, 1);
}

// torch.nn.modules.pooling._MaxPoolNd.extra_repr
std::string MaxPoolNd::extra_repr() const {
  return "kernel_size=" + kernel_size.str() + ", stride=" + stride.str() + ", padding=" + padding.str() +
         ", dilation=" + dilation.str() + ", ceil_mode=" + py_bool(ceil_mode);
}

Value MaxPoolNd::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.max_pool" + std::to_string(dims_) + "d", args[0], kernel_size.value(),
                  stride.value(), padding.value(), dilation.value(), kw("ceil_mode", ceil_mode),
                  kw("return_indices", return_indices));
}

MaxPool1d::MaxPool1d(PoolArg kernel, std::optional<PoolArg> stride_, PoolArg padding_, PoolArg dilation_,
                     bool return_indices_, bool ceil_mode_)
    : MaxPoolNd(1, std::move(kernel), std::move(stride_), std::move(padding_), std::move(dilation_),
                return_indices_, ceil_mode_) {}

std::shared_ptr<torch::nn::Module> MaxPool1d::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<MaxPool1d>(kernel_size, stride, padding, dilation, return_indices, ceil_mode);
  return finish_clone(std::move(copy), *this, device);
}

MaxPool2d::MaxPool2d(PoolArg kernel, std::optional<PoolArg> stride_, PoolArg padding_, PoolArg dilation_,
                     bool return_indices_, bool ceil_mode_)
    : MaxPoolNd(2, std::move(kernel), std::move(stride_), std::move(padding_), std::move(dilation_),
                return_indices_, ceil_mode_) {}

std::shared_ptr<torch::nn::Module> MaxPool2d::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<MaxPool2d>(kernel_size, stride, padding, dilation, return_indices, ceil_mode);
  return finish_clone(std::move(copy), *this, device);
}

// ---- AvgPool2d --------------------------------------------------------------

AvgPool2d::AvgPool2d(PoolArg kernel, std::optional<PoolArg> stride_, PoolArg padding_, bool ceil_mode_,
                     bool count_include_pad_, std::optional<int64_t> divisor_override_)
    : StandardModule("torch.nn.AvgPool2d", {"input"}),
      kernel_size(kernel),
      stride(stride_.value_or(kernel)),
      padding(std::move(padding_)),
      ceil_mode(ceil_mode_),
      count_include_pad(count_include_pad_),
      divisor_override(divisor_override_) {
  kernel_size.check("AvgPool2d", "kernel_size", 2, 1);
  stride.check("AvgPool2d", "stride", 2, 1);
  padding.check("AvgPool2d", "padding", 2, 0);
  if (divisor_override && *divisor_override == 0) throw Error("AvgPool2d: divisor_override must not be zero");
}

// torch.nn.modules.pooling._AvgPoolNd.extra_repr
std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + kernel_size.str() + ", stride=" + stride.str() + ", padding=" + padding.str();
}

Value AvgPool2d::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.avg_pool2d", args[0], kernel_size.value(), stride.value(),
                  padding.value(), ceil_mode, count_include_pad,
                  divisor_override ? Value(*divisor_override) : Value());
}

std::shared_ptr<torch::nn::Module> AvgPool2d::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<AvgPool2d>(kernel_size, stride, padding, ceil_mode, count_include_pad,
                                          divisor_override);
  return finish_clone(std::move(copy), *this, device);
}

// ---- AdaptiveAvgPool1d / AdaptiveAvgPool2d ----------------------------------

AdaptiveAvgPoolNd::AdaptiveAvgPoolNd(int dims, PoolArg output_size_)
    : StandardModule("torch.nn.AdaptiveAvgPool" + std::to_string(dims) + "d", {"input"}),
      output_size(std::move(output_size_)),
      dims_(dims) {
  output_size.check("AdaptiveAvgPool" + std::to_string(dims) + "d", "output_size", static_cast<size_t>(dims),
                    0,
                    /*allow_none=*/true);
}

// torch.nn.modules.pooling._AdaptiveAvgPoolNd.extra_repr
std::string AdaptiveAvgPoolNd::extra_repr() const { return "output_size=" + output_size.str(); }

Value AdaptiveAvgPoolNd::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.adaptive_avg_pool" + std::to_string(dims_) + "d", args[0],
                  output_size.value());
}

AdaptiveAvgPool1d::AdaptiveAvgPool1d(PoolArg output_size_) : AdaptiveAvgPoolNd(1, std::move(output_size_)) {}

std::shared_ptr<torch::nn::Module> AdaptiveAvgPool1d::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<AdaptiveAvgPool1d>(output_size);
  return finish_clone(std::move(copy), *this, device);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(PoolArg output_size_) : AdaptiveAvgPoolNd(2, std::move(output_size_)) {}

std::shared_ptr<torch::nn::Module> AdaptiveAvgPool2d::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<AdaptiveAvgPool2d>(output_size);
  return finish_clone(std::move(copy), *this, device);
}

}  // namespace fx::nn
