#pragma once
// torchvision.models.mobilenetv2 (0.29) in C++: Conv2dNormActivation
// (torchvision.ops.misc), InvertedResidual, MobileNetV2 and the mobilenet_v2
// builder.

#include <fx/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

// torchvision.ops.Conv2dNormActivation(in, out, kernel_size=3, stride=1,
// padding=None, groups=1, norm_layer=BatchNorm2d, activation_layer=ReLU6 here,
// dilation=1, inplace=True, bias=None): an nn.Sequential of conv ("0"),
// norm ("1") and activation ("2").
class Conv2dNormActivation : public Module {
 public:
  Conv2dNormActivation(int64_t in_channels, int64_t out_channels, int64_t kernel_size = 3, int64_t stride = 1,
                       int64_t groups = 1, int64_t dilation = 1);
  Value forward(const std::vector<Value>& args) override;
  int64_t out_channels;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

namespace mobilenetv2 {

// The block of MobileNetV2 (shufflenetv2 has another InvertedResidual).
class InvertedResidual : public Module {
 public:
  InvertedResidual(int64_t inp, int64_t oup, int64_t stride, int64_t expand_ratio);
  Value forward(const std::vector<Value>& args) override;

  int64_t stride, out_channels;
  bool use_res_connect;
  std::shared_ptr<nn::Sequential> conv;
};

}  // namespace mobilenetv2

// MobileNetV2(num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
//             round_nearest=8, dropout=0.2)
class MobileNetV2 : public Module {
 public:
  explicit MobileNetV2(int64_t num_classes = 1000, double width_mult = 1.0,
                       std::vector<std::vector<int64_t>> inverted_residual_setting = {},
                       int64_t round_nearest = 8, double dropout = 0.2);
  Value forward(const std::vector<Value>& args) override;

  int64_t last_channel;
  std::shared_ptr<nn::Sequential> features, classifier;
};

std::shared_ptr<MobileNetV2> mobilenet_v2(int64_t num_classes = 1000);

}  // namespace fx::models
