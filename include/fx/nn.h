#pragma once
// fx::nn: the standard torch.nn modules as fx::Modules, with PyTorch's
// parameter and buffer names, constructor arguments and initialization, so
// that state dicts interchange with Python. They are leaf modules: tracing
// records them as one call_module node (containers excepted).

#include <fx/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fx::nn {

// A standard module: a leaf unless it is a container.
class StandardModule : public Module {
 public:
  using Module::Module;
  bool is_standard_leaf() const override { return true; }
};

// torch.nn.Linear(in_features, out_features, bias=True)
class Linear : public StandardModule {
 public:
  std::string extra_repr() const override;
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Value forward(const std::vector<Value>& args) override;
  int64_t in_features, out_features;
  at::Tensor weight, bias;
};

// torch.nn.Conv2d(in, out, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)
class Conv2d : public StandardModule {
 public:
  std::string extra_repr() const override;
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
         std::vector<int64_t> stride = {1, 1}, std::vector<int64_t> padding = {0, 0},
         std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1, bool bias = true);
  Value forward(const std::vector<Value>& args) override;
  int64_t in_channels, out_channels, groups;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  at::Tensor weight, bias;
};

// torch.nn.BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
class BatchNorm2d : public StandardModule {
 public:
  std::string extra_repr() const override;
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-05, double momentum = 0.1);
  Value forward(const std::vector<Value>& args) override;
  int64_t num_features;
  double eps, momentum;
  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};

// torch.nn.ReLU(inplace=False)
class ReLU : public StandardModule {
 public:
  std::string extra_repr() const override;
  explicit ReLU(bool inplace = false);
  Value forward(const std::vector<Value>& args) override;
  bool inplace;
};

// torch.nn.Dropout(p=0.5, inplace=False)
class Dropout : public StandardModule {
 public:
  std::string extra_repr() const override;
  explicit Dropout(double p = 0.5, bool inplace = false);
  Value forward(const std::vector<Value>& args) override;
  double p;
  bool inplace;
};

// torch.nn.Flatten(start_dim=1, end_dim=-1)
class Flatten : public StandardModule {
 public:
  std::string extra_repr() const override;
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Value forward(const std::vector<Value>& args) override;
  int64_t start_dim, end_dim;
};

// torch.nn.Identity()
class Identity : public StandardModule {
 public:
  Identity();
  Value forward(const std::vector<Value>& args) override;
};

// torch.nn.Sequential(*modules): a container, traced through. Children are
// named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules = {});
  void append(std::shared_ptr<Module> m);
  Value forward(const std::vector<Value>& args) override;
  size_t size() const { return modules_.size(); }
  Module& operator[](size_t i) const { return *modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace fx::nn
