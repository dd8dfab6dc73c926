#pragma once
// Normalization layers: torch.nn.BatchNorm1d/2d/3d, InstanceNorm2d
// (torch/nn/modules/batchnorm.py, instancenorm.py), LayerNorm, GroupNorm
// (normalization.py), with PyTorch's parameters (weight, bias) and buffers
// (running_mean, running_var, num_batches_tracked).

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.modules.batchnorm._NormBase: the state of batch and instance norm.
// A momentum of None means a cumulative moving average.
class NormBase : public StandardModule {
 public:
  std::string extra_repr() const override;
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  NormBase(std::string type_name, int64_t num_features, double eps, std::optional<double> momentum,
           bool affine, bool track_running_stats);
};

// torch.nn.BatchNorm1d/2d/3d(num_features, eps=1e-05, momentum=0.1, affine=True,
// track_running_stats=True) on (N, C[, L]), (N, C, H, W), (N, C, D, H, W).
class BatchNormNd : public NormBase {
 public:
  Value forward(const std::vector<Value>& args) override;

 protected:
  BatchNormNd(std::string type_name, std::vector<int64_t> input_dims, int64_t num_features, double eps,
              std::optional<double> momentum, bool affine, bool track_running_stats);
  std::vector<int64_t> input_dims_;  // the accepted input ranks
};

// A class name cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FX_NN_BATCHNORM(Name)                                                                     \
  class Name : public BatchNormNd {                                                               \
   public:                                                                                        \
    explicit Name(int64_t num_features, double eps = 1e-05, std::optional<double> momentum = 0.1, \
                  bool affine = true, bool track_running_stats = true);                           \
    ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;                  \
  };
FX_NN_BATCHNORM(BatchNorm1d)
FX_NN_BATCHNORM(BatchNorm2d)
FX_NN_BATCHNORM(BatchNorm3d)
#undef FX_NN_BATCHNORM
// NOLINTEND(bugprone-macro-parentheses)

// torch.nn.InstanceNorm2d(num_features, eps=1e-05, momentum=0.1, affine=False,
// track_running_stats=False) on (N, C, H, W) or (C, H, W).
class InstanceNorm2d : public NormBase {
 public:
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-05, std::optional<double> momentum = 0.1,
                          bool affine = false, bool track_running_stats = false);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
};

// torch.nn.LayerNorm(normalized_shape, eps=1e-05, elementwise_affine=True):
// over the last len(normalized_shape) dimensions.
class LayerNorm : public StandardModule {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-05,
                     bool elementwise_affine = true);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  at::Tensor weight, bias;
};

// torch.nn.GroupNorm(num_groups, num_channels, eps=1e-05, affine=True).
class GroupNorm : public StandardModule {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-05, bool affine = true);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  at::Tensor weight, bias;
};

}  // namespace fx::nn
