#include "layers.h"

#include <torch/nn/init.h>

namespace fx::models::detail {

void init_weights(torch::nn::Module& root, ConvInit conv, LinearInit linear) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules(/*include_self=*/false)) {
    if (auto* c = dynamic_cast<nn::Conv2d*>(m.get())) {
      if (conv == ConvInit::none) continue;
      if (conv == ConvInit::kaiming_normal_fan_out_relu)
        torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      else if (conv == ConvInit::kaiming_normal)
        torch::nn::init::kaiming_normal_(c->weight);  // nn.init defaults: a=0, fan_in, leaky_relu
      else
        torch::nn::init::kaiming_uniform_(c->weight);  // nn.init defaults: a=0, fan_in, leaky_relu
      if (c->bias.defined()) c->bias.zero_();
    } else if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(m.get())) {
      bn->weight.fill_(1);
      bn->bias.zero_();
    } else if (auto* l = dynamic_cast<nn::Linear*>(m.get())) {
      if (linear == LinearInit::none) continue;
      if (linear == LinearInit::normal_0_01) l->weight.normal_(0, 0.01);
      if (l->bias.defined()) l->bias.zero_();
    }
  }
}

}  // namespace fx::models::detail
