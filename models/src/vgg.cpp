// torchvision/models/vgg.py, line for line.
#include <fx/models/vgg.h>

#include "layers.h"

namespace fx::models {

using detail::make;

VGG::VGG(std::shared_ptr<nn::Sequential> features_, int64_t num_classes, bool init_weights, double dropout)
    : Module("VGG", {"x"}) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (!features_) throw Error("VGG: features must be a module, got null");
  features = register_module("features", std::move(features_));
  avgpool = register_module("avgpool", make<nn::AdaptiveAvgPool2d>(nn::PoolArg{7, 7}));
  classifier = register_module("classifier", detail::sequential({
                                                 make<nn::Linear>(512 * 7 * 7, 4096),
                                                 make<nn::ReLU>(true),
                                                 make<nn::Dropout>(dropout),
                                                 make<nn::Linear>(4096, 4096),
                                                 make<nn::ReLU>(true),
                                                 make<nn::Dropout>(dropout),
                                                 make<nn::Linear>(4096, num_classes),
                                             }));
  if (init_weights)
    detail::init_weights(*this, detail::ConvInit::kaiming_normal_fan_out_relu,
                         detail::LinearInit::normal_0_01);
}

Value VGG::forward(const std::vector<Value>& args) {
  Value x = (*features)(args[0]);
  x = (*avgpool)(x);
  x = fx::call("torch.flatten", x, 1);
  x = (*classifier)(x);
  return x;
}

std::shared_ptr<nn::Sequential> make_layers(const std::vector<int64_t>& cfg, bool batch_norm) {
  std::vector<std::shared_ptr<Module>> layers;
  int64_t in_channels = 3;
  for (int64_t v : cfg) {
    if (v == kMaxPool) {
      layers.push_back(make<nn::MaxPool2d>(2, 2));
      continue;
    }
    if (v <= 0)
      throw Error("make_layers: a cfg entry is a channel count or kMaxPool, got " + std::to_string(v));
    layers.push_back(detail::conv2d(in_channels, v, 3, 1, 1));
    if (batch_norm) layers.push_back(make<nn::BatchNorm2d>(v));
    layers.push_back(make<nn::ReLU>(true));
    in_channels = v;
  }
  return detail::sequential(std::move(layers));
}

std::shared_ptr<VGG> vgg11(int64_t num_classes) {
  const int64_t M = kMaxPool;
  return make<VGG>(make_layers({64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M}), num_classes);
}

}  // namespace fx::models
