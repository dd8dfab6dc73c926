#pragma once
// torchvision.models.resnet (0.29) in C++: BasicBlock, Bottleneck, ResNet and
// the resnet18 / resnet50 builders. Submodule names, nesting and forward are
// torchvision's, so symbolic_trace records the graph torch.fx records for the
// Python model and fx::load_state_dict reads its state dict.

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

class BasicBlock : public Module {
 public:
  static constexpr int64_t expansion = 1;
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride = 1,
             std::shared_ptr<nn::Sequential> downsample = nullptr, int64_t groups = 1,
             int64_t base_width = 64, int64_t dilation = 1);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::Sequential> downsample;  // null: Python's None
  int64_t stride;
};

class Bottleneck : public Module {
 public:
  static constexpr int64_t expansion = 4;
  Bottleneck(int64_t inplanes, int64_t planes, int64_t stride = 1,
             std::shared_ptr<nn::Sequential> downsample = nullptr, int64_t groups = 1,
             int64_t base_width = 64, int64_t dilation = 1);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::Sequential> downsample;
  int64_t stride;
};

// ResNet(block, layers, num_classes=1000, zero_init_residual=False, groups=1,
//        width_per_group=64, replace_stride_with_dilation=None); the norm
// layer is BatchNorm2d.
class ResNet : public Module {
 public:
  enum class Block { basic, bottleneck };
  ResNet(Block block, std::vector<int64_t> layers, int64_t num_classes = 1000,
         bool zero_init_residual = false, int64_t groups = 1, int64_t width_per_group = 64,
         std::vector<bool> replace_stride_with_dilation = {false, false, false});
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::MaxPool2d> maxpool;
  std::shared_ptr<nn::Sequential> layer1, layer2, layer3, layer4;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Linear> fc;

 private:
  std::shared_ptr<nn::Sequential> make_layer(Block block, int64_t planes, int64_t blocks, int64_t stride,
                                             bool dilate);
  int64_t inplanes_ = 64, dilation_ = 1, groups_, base_width_;
};

std::shared_ptr<ResNet> resnet18(int64_t num_classes = 1000);
std::shared_ptr<ResNet> resnet50(int64_t num_classes = 1000);

}  // namespace fx::models
