#pragma once
// torchvision.models.vgg (0.29) in C++: VGG(features, num_classes=1000,
// init_weights=True, dropout=0.5), make_layers and the vgg11 builder.

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

class VGG : public Module {
 public:
  VGG(std::shared_ptr<nn::Sequential> features, int64_t num_classes = 1000, bool init_weights = true,
      double dropout = 0.5);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Sequential> features, classifier;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
};

// make_layers(cfg, batch_norm): `cfg` lists output channels, kMaxPool for "M".
constexpr int64_t kMaxPool = -1;
std::shared_ptr<nn::Sequential> make_layers(const std::vector<int64_t>& cfg, bool batch_norm = false);

// vgg11: cfg "A", no batch norm.
std::shared_ptr<VGG> vgg11(int64_t num_classes = 1000);

}  // namespace fx::models
