// torchvision/models/shufflenetv2.py, line for line.
#include <fx/models/shufflenetv2.h>

#include "layers.h"

namespace fx::models {

using detail::conv2d;
using detail::make;

namespace shufflenetv2 {

Value channel_shuffle(const Value& x_, int64_t groups) {
  // batchsize, num_channels, height, width = x.size()
  std::vector<Value> size = x_.size().unpack(4);
  Value channels_per_group = fx::floordiv(size[1], groups);
  Value x = x_.view(size[0], groups, channels_per_group, size[2], size[3]);
  x = fx::call("torch.transpose", x, 1, 2).contiguous();
  x = x.view(size[0], size[1], size[2], size[3]);  // flatten
  return x;
}

namespace {
// InvertedResidual.depthwise_conv
std::shared_ptr<nn::Conv2d> depthwise_conv(int64_t i, int64_t o, int64_t kernel_size, int64_t stride = 1,
                                           int64_t padding = 0, bool bias = false) {
  return conv2d(i, o, kernel_size, stride, padding, /*groups=*/i, bias);
}
}  // namespace

InvertedResidual::InvertedResidual(int64_t inp, int64_t oup, int64_t stride_)
    : Module("InvertedResidual", {"x"}), stride(stride_) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (stride < 1 || stride > 3)
    throw Error("InvertedResidual: illegal stride value " + std::to_string(stride));
  const int64_t branch_features = oup / 2;
  if (stride == 1 && inp != branch_features << 1)
    throw Error("InvertedResidual: invalid combination of stride " + std::to_string(stride) + ", inp " +
                std::to_string(inp) + " and oup " + std::to_string(oup) +
                " values. If stride == 1 then inp should be equal to oup // 2 << 1.");
  if (stride > 1) {
    branch1 = register_module(
        "branch1", detail::sequential({depthwise_conv(inp, inp, 3, stride, 1), make<nn::BatchNorm2d>(inp),
                                       conv2d(inp, branch_features, 1, 1, 0, 1, /*bias=*/false),
                                       make<nn::BatchNorm2d>(branch_features), make<nn::ReLU>(true)}));
  } else {
    branch1 = register_module("branch1", detail::sequential({}));
  }
  branch2 = register_module(
      "branch2",
      detail::sequential({conv2d(stride > 1 ? inp : branch_features, branch_features, 1, 1, 0, 1, false),
                          make<nn::BatchNorm2d>(branch_features), make<nn::ReLU>(true),
                          depthwise_conv(branch_features, branch_features, 3, stride, 1),
                          make<nn::BatchNorm2d>(branch_features),
                          conv2d(branch_features, branch_features, 1, 1, 0, 1, false),
                          make<nn::BatchNorm2d>(branch_features), make<nn::ReLU>(true)}));
}

Value InvertedResidual::forward(const std::vector<Value>& args) {
  const Value& x = args[0];
  Value out;
  if (stride == 1) {
    std::vector<Value> halves = x.chunk(2, kw("dim", 1)).unpack(2);  // x1, x2 = x.chunk(2, dim=1)
    out = fx::call("torch.cat", Value::tuple({halves[0], (*branch2)(halves[1])}), kw("dim", 1));
  } else {
    out = fx::call("torch.cat", Value::tuple({(*branch1)(x), (*branch2)(x)}), kw("dim", 1));
  }
  out = channel_shuffle(out, 2);
  return out;
}

}  // namespace shufflenetv2

ShuffleNetV2::ShuffleNetV2(std::vector<int64_t> stages_repeats, std::vector<int64_t> stages_out_channels,
                           int64_t num_classes)
    : Module("ShuffleNetV2", {"x"}) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (stages_repeats.size() != 3)
    throw Error("ShuffleNetV2: expected stages_repeats as list of 3 positive ints");
  if (stages_out_channels.size() != 5)
    throw Error("ShuffleNetV2: expected stages_out_channels as list of 5 positive ints");
  int64_t input_channels = 3;
  int64_t output_channels = stages_out_channels[0];
  conv1 = register_module("conv1",
                          detail::sequential({conv2d(input_channels, output_channels, 3, 2, 1, 1, false),
                                              make<nn::BatchNorm2d>(output_channels), make<nn::ReLU>(true)}));
  input_channels = output_channels;
  maxpool = register_module("maxpool", make<nn::MaxPool2d>(3, 2, 1));
  std::shared_ptr<nn::Sequential>* stages[] = {&stage2, &stage3, &stage4};
  for (size_t i = 0; i < 3; ++i) {
    output_channels = stages_out_channels[i + 1];
    std::vector<std::shared_ptr<Module>> seq = {
        make<shufflenetv2::InvertedResidual>(input_channels, output_channels, 2)};
    for (int64_t r = 0; r < stages_repeats[i] - 1; ++r)
      seq.push_back(make<shufflenetv2::InvertedResidual>(output_channels, output_channels, 1));
    *stages[i] = register_module("stage" + std::to_string(i + 2), detail::sequential(std::move(seq)));
    input_channels = output_channels;
  }
  output_channels = stages_out_channels.back();
  conv5 = register_module("conv5",
                          detail::sequential({conv2d(input_channels, output_channels, 1, 1, 0, 1, false),
                                              make<nn::BatchNorm2d>(output_channels), make<nn::ReLU>(true)}));
  fc = register_module("fc", make<nn::Linear>(output_channels, num_classes));
}

Value ShuffleNetV2::forward(const std::vector<Value>& args) {
  Value x = (*conv1)(args[0]);
  x = (*maxpool)(x);
  x = (*stage2)(x);
  x = (*stage3)(x);
  x = (*stage4)(x);
  x = (*conv5)(x);
  x = x.mean(Value::list({2, 3}));  // globalpool
  x = (*fc)(x);
  return x;
}

std::shared_ptr<ShuffleNetV2> shufflenet_v2_x1_0(int64_t num_classes) {
  return make<ShuffleNetV2>(std::vector<int64_t>{4, 8, 4}, std::vector<int64_t>{24, 116, 232, 464, 1024},
                            num_classes);
}

}  // namespace fx::models
