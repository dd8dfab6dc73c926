// torchvision/models/alexnet.py, line for line.
#include <fx/models/alexnet.h>

#include "layers.h"

namespace fx::models {

using detail::conv2d;
using detail::make;

AlexNet::AlexNet(int64_t num_classes, double dropout) : Module("AlexNet", {"x"}) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  features = register_module("features", detail::sequential({
                                             conv2d(3, 64, 11, 4, 2),
                                             make<nn::ReLU>(true),
                                             make<nn::MaxPool2d>(3, 2),
                                             conv2d(64, 192, 5, 1, 2),
                                             make<nn::ReLU>(true),
                                             make<nn::MaxPool2d>(3, 2),
                                             conv2d(192, 384, 3, 1, 1),
                                             make<nn::ReLU>(true),
                                             conv2d(384, 256, 3, 1, 1),
                                             make<nn::ReLU>(true),
                                             conv2d(256, 256, 3, 1, 1),
                                             make<nn::ReLU>(true),
                                             make<nn::MaxPool2d>(3, 2),
                                         }));
  avgpool = register_module("avgpool", make<nn::AdaptiveAvgPool2d>(nn::PoolArg{6, 6}));
  classifier = register_module("classifier", detail::sequential({
                                                 make<nn::Dropout>(dropout),
                                                 make<nn::Linear>(256 * 6 * 6, 4096),
                                                 make<nn::ReLU>(true),
                                                 make<nn::Dropout>(dropout),
                                                 make<nn::Linear>(4096, 4096),
                                                 make<nn::ReLU>(true),
                                                 make<nn::Linear>(4096, num_classes),
                                             }));
}

Value AlexNet::forward(const std::vector<Value>& args) {
  Value x = (*features)(args[0]);
  x = (*avgpool)(x);
  x = fx::call("torch.flatten", x, 1);
  x = (*classifier)(x);
  return x;
}

std::shared_ptr<AlexNet> alexnet(int64_t num_classes) { return make<AlexNet>(num_classes); }

}  // namespace fx::models
