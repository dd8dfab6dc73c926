// torchvision/models/mobilenetv2.py and torchvision.ops.misc.Conv2dNormActivation, line for line.
#include <fx/models/mobilenetv2.h>

#include <algorithm>

#include "layers.h"

namespace fx::models {

using detail::make;

namespace {
// torchvision.models._utils._make_divisible: round to a multiple of divisor,
// never more than 10% down.
int64_t make_divisible(double v, int64_t divisor) {
  const int64_t min_value = divisor;
  int64_t new_v =
      std::max(min_value, static_cast<int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(new_v) < 0.9 * v) new_v += divisor;
  return new_v;
}
}  // namespace

Conv2dNormActivation::Conv2dNormActivation(int64_t in_channels, int64_t out_channels_, int64_t kernel_size,
                                           int64_t stride, int64_t groups, int64_t dilation)
    : Module("Conv2dNormActivation", {"input"}), out_channels(out_channels_) {
  const int64_t padding = (kernel_size - 1) / 2 * dilation;
  // bias=None with a norm layer: no bias.
  layers_ = {detail::conv2d(in_channels, out_channels, kernel_size, stride, padding, groups, /*bias=*/false,
                            dilation),
             make<nn::BatchNorm2d>(out_channels), make<nn::ReLU6>(/*inplace=*/true)};
  for (size_t i = 0; i < layers_.size(); ++i) register_module(std::to_string(i), layers_[i]);
}

Value Conv2dNormActivation::forward(const std::vector<Value>& args) {
  Value x = args[0];
  for (auto& m : layers_) x = (*m)(x);
  return x;
}

namespace mobilenetv2 {

InvertedResidual::InvertedResidual(int64_t inp, int64_t oup, int64_t stride_, int64_t expand_ratio)
    : Module("InvertedResidual", {"x"}), stride(stride_), out_channels(oup) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (stride != 1 && stride != 2)
    throw Error("InvertedResidual: stride should be 1 or 2 insted of " + std::to_string(stride));
  // int(round(inp * expand_ratio)) of ints is exact.
  const int64_t hidden_dim = inp * expand_ratio;
  use_res_connect = stride == 1 && inp == oup;
  std::vector<std::shared_ptr<Module>> layers;
  if (expand_ratio != 1) layers.push_back(make<Conv2dNormActivation>(inp, hidden_dim, 1));  // pw
  layers.push_back(
      make<Conv2dNormActivation>(hidden_dim, hidden_dim, 3, stride, /*groups=*/hidden_dim));  // dw
  layers.push_back(detail::conv2d(hidden_dim, oup, 1, 1, 0, 1, /*bias=*/false));              // pw-linear
  layers.push_back(make<nn::BatchNorm2d>(oup));
  conv = register_module("conv", detail::sequential(std::move(layers)));
}

Value InvertedResidual::forward(const std::vector<Value>& args) {
  const Value& x = args[0];
  if (use_res_connect) return x + (*conv)(x);
  return (*conv)(x);
}

}  // namespace mobilenetv2

MobileNetV2::MobileNetV2(int64_t num_classes, double width_mult,
                         std::vector<std::vector<int64_t>> inverted_residual_setting, int64_t round_nearest,
                         double dropout)
    : Module("MobileNetV2", {"x"}) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  int64_t input_channel = 32;
  const int64_t last = 1280;
  if (inverted_residual_setting.empty())
    inverted_residual_setting = {
        // t, c, n, s
        {1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
        {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
    };
  if (inverted_residual_setting[0].size() != 4)
    throw Error("MobileNetV2: inverted_residual_setting should be non-empty or a 4-element list, got " +
                std::to_string(inverted_residual_setting[0].size()) + " elements");
  input_channel = make_divisible(static_cast<double>(input_channel) * width_mult, round_nearest);
  last_channel = make_divisible(static_cast<double>(last) * std::max(1.0, width_mult), round_nearest);
  std::vector<std::shared_ptr<Module>> layers = {make<Conv2dNormActivation>(3, input_channel, 3, 2)};
  for (const auto& tcns : inverted_residual_setting) {
    if (tcns.size() != 4) throw Error("MobileNetV2: every inverted_residual_setting entry is [t, c, n, s]");
    const int64_t output_channel = make_divisible(static_cast<double>(tcns[1]) * width_mult, round_nearest);
    for (int64_t i = 0; i < tcns[2]; ++i) {
      layers.push_back(
          make<mobilenetv2::InvertedResidual>(input_channel, output_channel, i == 0 ? tcns[3] : 1, tcns[0]));
      input_channel = output_channel;
    }
  }
  layers.push_back(make<Conv2dNormActivation>(input_channel, last_channel, 1));
  features = register_module("features", detail::sequential(std::move(layers)));
  classifier = register_module(
      "classifier",
      detail::sequential({make<nn::Dropout>(dropout), make<nn::Linear>(last_channel, num_classes)}));
  detail::init_weights(*this, detail::ConvInit::kaiming_normal_fan_out_relu, detail::LinearInit::normal_0_01);
}

Value MobileNetV2::forward(const std::vector<Value>& args) {
  Value x = (*features)(args[0]);
  // Cannot use "squeeze" as batch-size can be 1
  x = fx::call("torch.nn.functional.adaptive_avg_pool2d", x, Value::tuple({1, 1}));
  x = fx::call("torch.flatten", x, 1);
  x = (*classifier)(x);
  return x;
}

std::shared_ptr<MobileNetV2> mobilenet_v2(int64_t num_classes) { return make<MobileNetV2>(num_classes); }

}  // namespace fx::models
