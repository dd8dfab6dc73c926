#pragma once
// torchvision.models.alexnet (0.29) in C++: AlexNet(num_classes=1000, dropout=0.5).

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

class AlexNet : public Module {
 public:
  explicit AlexNet(int64_t num_classes = 1000, double dropout = 0.5);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<nn::Sequential> features, classifier;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
};

std::shared_ptr<AlexNet> alexnet(int64_t num_classes = 1000);

}  // namespace fx::models
