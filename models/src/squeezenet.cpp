// torchvision/models/squeezenet.py, line for line.
#include <fx/models/squeezenet.h>

#include <torch/nn/init.h>

#include "layers.h"

namespace fx::models {

using detail::conv2d;
using detail::make;

Fire::Fire(int64_t inplanes_, int64_t squeeze_planes, int64_t expand1x1_planes, int64_t expand3x3_planes)
    : Module("Fire", {"x"}), inplanes(inplanes_) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  squeeze = register_module("squeeze", conv2d(inplanes, squeeze_planes, 1));
  squeeze_activation = register_module("squeeze_activation", make<nn::ReLU>(true));
  expand1x1 = register_module("expand1x1", conv2d(squeeze_planes, expand1x1_planes, 1));
  expand1x1_activation = register_module("expand1x1_activation", make<nn::ReLU>(true));
  expand3x3 = register_module("expand3x3", conv2d(squeeze_planes, expand3x3_planes, 3, 1, 1));
  expand3x3_activation = register_module("expand3x3_activation", make<nn::ReLU>(true));
}

Value Fire::forward(const std::vector<Value>& args) {
  Value x = (*squeeze_activation)((*squeeze)(args[0]));
  return fx::call(
      "torch.cat",
      Value::list({(*expand1x1_activation)((*expand1x1)(x)), (*expand3x3_activation)((*expand3x3)(x))}), 1);
}

SqueezeNet::SqueezeNet(const std::string& version, int64_t num_classes_, double dropout)
    : Module("SqueezeNet", {"x"}), num_classes(num_classes_) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  auto pool = [] { return make<nn::MaxPool2d>(3, 2, 0, 1, false, /*ceil_mode=*/true); };
  if (version == "1_0") {
    features = register_module(
        "features",
        detail::sequential({conv2d(3, 96, 7, 2), make<nn::ReLU>(true), pool(), make<Fire>(96, 16, 64, 64),
                            make<Fire>(128, 16, 64, 64), make<Fire>(128, 32, 128, 128), pool(),
                            make<Fire>(256, 32, 128, 128), make<Fire>(256, 48, 192, 192),
                            make<Fire>(384, 48, 192, 192), make<Fire>(384, 64, 256, 256), pool(),
                            make<Fire>(512, 64, 256, 256)}));
  } else if (version == "1_1") {
    features = register_module(
        "features", detail::sequential({conv2d(3, 64, 3, 2), make<nn::ReLU>(true), pool(),
                                        make<Fire>(64, 16, 64, 64), make<Fire>(128, 16, 64, 64), pool(),
                                        make<Fire>(128, 32, 128, 128), make<Fire>(256, 32, 128, 128), pool(),
                                        make<Fire>(256, 48, 192, 192), make<Fire>(384, 48, 192, 192),
                                        make<Fire>(384, 64, 256, 256), make<Fire>(512, 64, 256, 256)}));
  } else {
    throw Error("Unsupported SqueezeNet version " + version + ": 1_0 or 1_1 expected");
  }
  // Final convolution is initialized differently from the rest.
  auto final_conv = conv2d(512, num_classes, 1);
  classifier = register_module(
      "classifier", detail::sequential({make<nn::Dropout>(dropout), final_conv, make<nn::ReLU>(true),
                                        make<nn::AdaptiveAvgPool2d>(nn::PoolArg{1, 1})}));
  detail::init_weights(*this, detail::ConvInit::kaiming_uniform, detail::LinearInit::none);
  torch::NoGradGuard no_grad;
  final_conv->weight.normal_(0.0, 0.01);
}

Value SqueezeNet::forward(const std::vector<Value>& args) {
  Value x = (*features)(args[0]);
  x = (*classifier)(x);
  return fx::call("torch.flatten", x, 1);
}

std::shared_ptr<SqueezeNet> squeezenet1_0(int64_t num_classes) {
  return make<SqueezeNet>("1_0", num_classes);
}

}  // namespace fx::models
