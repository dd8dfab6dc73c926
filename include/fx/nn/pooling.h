#pragma once
// fx::nn pooling modules: torch.nn.MaxPool1d/2d, AvgPool2d and
// AdaptiveAvgPool1d/2d (torch/nn/modules/pooling.py), leaf modules with
// PyTorch's constructor arguments, defaults and repr.

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

// A pooling argument as Python holds it: an int (`kernel_size=3`) or a tuple
// (`kernel_size=(3, 3)`, `output_size=(None, 7)`). PyTorch's pooling modules
// keep what they were given, pass it to F.* unchanged and print it back, so
// the two spellings are kept apart.
class PoolArg {
 public:
  PoolArg(int64_t v) : items_{v}, is_int_(true) {}
  PoolArg(int v) : PoolArg(static_cast<int64_t>(v)) {}
  PoolArg(std::initializer_list<std::optional<int64_t>> items) : items_(items) {}
  explicit PoolArg(std::vector<std::optional<int64_t>> items) : items_(std::move(items)) {}

  bool is_int() const { return is_int_; }
  const std::vector<std::optional<int64_t>>& items() const { return items_; }
  // The Python value: an int or a tuple (None for an absent entry).
  Value value() const;
  // str(value): `3`, `(3, 3)`, `(None, 7)`, `(2,)`.
  std::string str() const;
  // Checks that this is an int or a tuple of `n` ints, each at least
  // `min_value` (None allowed only where `allow_none`); throws fx::Error
  // naming `module` and `what` otherwise.
  void check(const std::string& module, const std::string& what, size_t n, int64_t min_value,
             bool allow_none = false) const;

 private:
  std::vector<std::optional<int64_t>> items_;
  bool is_int_ = false;
};

// torch.nn.MaxPool1d / MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
//                                return_indices=False, ceil_mode=False)
// A stride of None means kernel_size, as in PyTorch (which stores it so).
class MaxPoolNd : public StandardModule {
 public:
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  PoolArg kernel_size, stride, padding, dilation;
  bool return_indices, ceil_mode;

 protected:
  MaxPoolNd(int dims, PoolArg kernel_size, std::optional<PoolArg> stride, PoolArg padding, PoolArg dilation,
            bool return_indices, bool ceil_mode);
  const int dims_;
};

class MaxPool1d : public MaxPoolNd {
 public:
  explicit MaxPool1d(PoolArg kernel_size, std::optional<PoolArg> stride = std::nullopt, PoolArg padding = 0,
                     PoolArg dilation = 1, bool return_indices = false, bool ceil_mode = false);
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;
};

class MaxPool2d : public MaxPoolNd {
 public:
  explicit MaxPool2d(PoolArg kernel_size, std::optional<PoolArg> stride = std::nullopt, PoolArg padding = 0,
                     PoolArg dilation = 1, bool return_indices = false, bool ceil_mode = false);
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;
};

// torch.nn.AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
//                    count_include_pad=True, divisor_override=None)
class AvgPool2d : public StandardModule {
 public:
  explicit AvgPool2d(PoolArg kernel_size, std::optional<PoolArg> stride = std::nullopt, PoolArg padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true,
                     std::optional<int64_t> divisor_override = std::nullopt);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;
  PoolArg kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

// torch.nn.AdaptiveAvgPool1d / AdaptiveAvgPool2d(output_size); a None entry
// of output_size keeps the input's size.
class AdaptiveAvgPoolNd : public StandardModule {
 public:
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  PoolArg output_size;

 protected:
  AdaptiveAvgPoolNd(int dims, PoolArg output_size);
  const int dims_;
};

class AdaptiveAvgPool1d : public AdaptiveAvgPoolNd {
 public:
  explicit AdaptiveAvgPool1d(PoolArg output_size);
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;
};

class AdaptiveAvgPool2d : public AdaptiveAvgPoolNd {
 public:
  explicit AdaptiveAvgPool2d(PoolArg output_size);
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;
};

}  // namespace fx::nn
