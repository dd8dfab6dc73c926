#pragma once
// torchvision.models.squeezenet (0.29) in C++: Fire, SqueezeNet(version="1_0",
// num_classes=1000, dropout=0.5) and the squeezenet1_0 builder.

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fx::models {

class Fire : public Module {
 public:
  Fire(int64_t inplanes, int64_t squeeze_planes, int64_t expand1x1_planes, int64_t expand3x3_planes);
  Value forward(const std::vector<Value>& args) override;

  int64_t inplanes;
  std::shared_ptr<nn::Conv2d> squeeze, expand1x1, expand3x3;
  std::shared_ptr<nn::ReLU> squeeze_activation, expand1x1_activation, expand3x3_activation;
};

class SqueezeNet : public Module {
 public:
  explicit SqueezeNet(const std::string& version = "1_0", int64_t num_classes = 1000, double dropout = 0.5);
  Value forward(const std::vector<Value>& args) override;

  int64_t num_classes;
  std::shared_ptr<nn::Sequential> features, classifier;
};

std::shared_ptr<SqueezeNet> squeezenet1_0(int64_t num_classes = 1000);

}  // namespace fx::models
