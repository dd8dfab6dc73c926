#pragma once
// Modules that reshape or resample: torch.nn.Flatten, Unflatten
// (torch/nn/modules/flatten.py), Upsample (upsampling.py), PixelShuffle
// (pixelshuffle.py).

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.Flatten(start_dim=1, end_dim=-1): input.flatten(start_dim, end_dim).
class Flatten : public StandardModule {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t start_dim, end_dim;
};

// torch.nn.Unflatten(dim, unflattened_size): input.unflatten(dim, unflattened_size).
class Unflatten : public StandardModule {
 public:
  Unflatten(int64_t dim, std::vector<int64_t> unflattened_size);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t dim;
  std::vector<int64_t> unflattened_size;
};

// torch.nn.Upsample(size=None, scale_factor=None, mode='nearest',
//   align_corners=None, recompute_scale_factor=None): F.interpolate.
// A size or scale_factor of one value applies to every spatial dimension
// (Python's int / float); several values are a tuple.
class Upsample : public StandardModule {
 public:
  struct Options {
    std::vector<int64_t> size;
    std::vector<double> scale_factor;
    std::string mode = "nearest";
    std::optional<bool> align_corners;
    std::optional<bool> recompute_scale_factor;
  };
  explicit Upsample(Options options);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  Options options;

 private:
  Value size_value() const;
  Value scale_factor_value() const;
};

// torch.nn.PixelShuffle(upscale_factor): F.pixel_shuffle.
class PixelShuffle : public StandardModule {
 public:
  explicit PixelShuffle(int64_t upscale_factor);
  std::string extra_repr() const override;
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  int64_t upscale_factor;
};

}  // namespace fx::nn
