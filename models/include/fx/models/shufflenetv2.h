#pragma once
// torchvision.models.shufflenetv2 (0.29) in C++: channel_shuffle,
// InvertedResidual, ShuffleNetV2 and the shufflenet_v2_x1_0 builder.

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

namespace shufflenetv2 {

// The unit of ShuffleNet V2 (mobilenetv2 has another InvertedResidual).
class InvertedResidual : public Module {
 public:
  InvertedResidual(int64_t inp, int64_t oup, int64_t stride);
  Value forward(const std::vector<Value>& args) override;

  int64_t stride;
  std::shared_ptr<nn::Sequential> branch1, branch2;  // branch1 is empty when stride == 1
};

// x.view(b, groups, c // groups, h, w), transposed, made contiguous and viewed back.
Value channel_shuffle(const Value& x, int64_t groups);

}  // namespace shufflenetv2

class ShuffleNetV2 : public Module {
 public:
  ShuffleNetV2(std::vector<int64_t> stages_repeats, std::vector<int64_t> stages_out_channels,
               int64_t num_classes = 1000);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Sequential> conv1, stage2, stage3, stage4, conv5;
  std::shared_ptr<nn::MaxPool2d> maxpool;
  std::shared_ptr<nn::Linear> fc;
};

std::shared_ptr<ShuffleNetV2> shufflenet_v2_x1_0(int64_t num_classes = 1000);

}  // namespace fx::models
