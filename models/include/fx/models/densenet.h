#pragma once
// torchvision.models.densenet (0.29) in C++: _DenseLayer, _DenseBlock,
// _Transition, DenseNet and the densenet121 builder. (C++ reserves names
// that begin with an underscore and a capital, so the C++ classes drop the
// underscore; their type names keep it.) memory_efficient (checkpointing)
// is not ported: it changes nothing in eval mode or in the traced graph.

#include <fx/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

namespace detail {
class NamedSequential;
}

// _DenseLayer: forward takes a tensor or a list of the previous features.
class DenseLayer : public Module {
 public:
  DenseLayer(int64_t num_input_features, int64_t growth_rate, int64_t bn_size, double drop_rate);
  Value forward(const std::vector<Value>& args) override;
  Value bn_function(const Value& inputs);

  std::shared_ptr<nn::BatchNorm2d> norm1, norm2;
  std::shared_ptr<nn::ReLU> relu1, relu2;
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  double drop_rate;
};

// _DenseBlock(nn.ModuleDict): denselayer1, denselayer2, ...
class DenseBlock : public nn::ModuleDict {
 public:
  DenseBlock(int64_t num_layers, int64_t num_input_features, int64_t bn_size, int64_t growth_rate,
             double drop_rate);
  Value forward(const std::vector<Value>& args) override;
};

class DenseNet : public Module {
 public:
  explicit DenseNet(int64_t growth_rate = 32, std::vector<int64_t> block_config = {6, 12, 24, 16},
                    int64_t num_init_features = 64, int64_t bn_size = 4, double drop_rate = 0,
                    int64_t num_classes = 1000);
  Value forward(const std::vector<Value>& args) override;

  std::shared_ptr<detail::NamedSequential> features;  // conv0, norm0, relu0, pool0, denseblock1, ...
  std::shared_ptr<nn::Linear> classifier;
};

std::shared_ptr<DenseNet> densenet121(int64_t num_classes = 1000);

}  // namespace fx::models
