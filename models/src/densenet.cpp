// torchvision/models/densenet.py, line for line.
#include <fx/models/densenet.h>

#include "layers.h"

namespace fx::models {

using detail::conv2d;
using detail::make;

DenseLayer::DenseLayer(int64_t num_input_features, int64_t growth_rate, int64_t bn_size, double drop_rate_)
    : Module("_DenseLayer", {"input"}), drop_rate(drop_rate_) {
  annotate("input", "torch.Tensor");  // forward(self, input: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  norm1 = register_module("norm1", make<nn::BatchNorm2d>(num_input_features));
  relu1 = register_module("relu1", make<nn::ReLU>(true));
  conv1 = register_module("conv1", conv2d(num_input_features, bn_size * growth_rate, 1, 1, 0, 1, false));
  norm2 = register_module("norm2", make<nn::BatchNorm2d>(bn_size * growth_rate));
  relu2 = register_module("relu2", make<nn::ReLU>(true));
  conv2 = register_module("conv2", conv2d(bn_size * growth_rate, growth_rate, 3, 1, 1, 1, false));
}

Value DenseLayer::bn_function(const Value& inputs) {
  Value concated_features = fx::call("torch.cat", inputs, 1);
  return (*conv1)((*relu1)((*norm1)(concated_features)));
}

Value DenseLayer::forward(const std::vector<Value>& args) {
  const Value& input = args[0];
  // isinstance(input, Tensor): a list of features is not.
  Value prev_features = input.is_sequence() ? input : Value::list({input});
  Value bottleneck_output = bn_function(prev_features);
  Value new_features = (*conv2)((*relu2)((*norm2)(bottleneck_output)));
  if (drop_rate > 0)
    new_features = fx::call("torch.nn.functional.dropout", new_features, kw("p", drop_rate),
                            kw("training", is_training()));
  return new_features;
}

DenseBlock::DenseBlock(int64_t num_layers, int64_t num_input_features, int64_t bn_size, int64_t growth_rate,
                       double drop_rate) {
  set_forward_params({"init_features"});
  annotate("init_features", "torch.Tensor");  // forward(self, init_features: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  for (int64_t i = 0; i < num_layers; ++i)
    insert("denselayer" + std::to_string(i + 1),
           make<DenseLayer>(num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate));
}

Value DenseBlock::forward(const std::vector<Value>& args) {
  std::vector<Value> features = {args[0]};
  for (const auto& [name, layer] : items()) {
    Value new_features = (*layer)(Value::list(features));
    features.push_back(new_features);
  }
  return fx::call("torch.cat", Value::list(std::move(features)), 1);
}

namespace {
// _Transition(nn.Sequential): norm, relu, conv, pool.
std::shared_ptr<detail::NamedSequential> transition(int64_t num_input_features, int64_t num_output_features) {
  auto t = make<detail::NamedSequential>("_Transition");
  t->add("norm", make<nn::BatchNorm2d>(num_input_features));
  t->add("relu", make<nn::ReLU>(true));
  t->add("conv", conv2d(num_input_features, num_output_features, 1, 1, 0, 1, false));
  t->add("pool", make<nn::AvgPool2d>(2, 2));
  return t;
}
}  // namespace

DenseNet::DenseNet(int64_t growth_rate, std::vector<int64_t> block_config, int64_t num_init_features,
                   int64_t bn_size, double drop_rate, int64_t num_classes)
    : Module("DenseNet", {"x"}) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  features = register_module("features", make<detail::NamedSequential>());
  features->add("conv0", conv2d(3, num_init_features, 7, 2, 3, 1, false));
  features->add("norm0", make<nn::BatchNorm2d>(num_init_features));
  features->add("relu0", make<nn::ReLU>(true));
  features->add("pool0", make<nn::MaxPool2d>(3, 2, 1));
  int64_t num_features = num_init_features;
  for (size_t i = 0; i < block_config.size(); ++i) {
    features->add("denseblock" + std::to_string(i + 1),
                  make<DenseBlock>(block_config[i], num_features, bn_size, growth_rate, drop_rate));
    num_features = num_features + block_config[i] * growth_rate;
    if (i != block_config.size() - 1) {
      features->add("transition" + std::to_string(i + 1), transition(num_features, num_features / 2));
      num_features = num_features / 2;
    }
  }
  features->add("norm5", make<nn::BatchNorm2d>(num_features));
  classifier = register_module("classifier", make<nn::Linear>(num_features, num_classes));
  detail::init_weights(*this, detail::ConvInit::kaiming_normal, detail::LinearInit::zero_bias);
}

Value DenseNet::forward(const std::vector<Value>& args) {
  Value f = (*features)(args[0]);
  Value out = fx::call("torch.nn.functional.relu", f, kw("inplace", true));
  out = fx::call("torch.nn.functional.adaptive_avg_pool2d", out, Value::tuple({1, 1}));
  out = fx::call("torch.flatten", out, 1);
  out = (*classifier)(out);
  return out;
}

std::shared_ptr<DenseNet> densenet121(int64_t num_classes) {
  return make<DenseNet>(32, std::vector<int64_t>{6, 12, 24, 16}, 64, 4, 0, num_classes);
}

}  // namespace fx::models
