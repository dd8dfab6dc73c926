// torchvision/models/resnet.py, line for line.
#include <fx/models/resnet.h>

#include <torch/nn/init.h>

#include "layers.h"

namespace fx::models {

using detail::make;

namespace {
// conv3x3 / conv1x1 of resnet.py.
std::shared_ptr<nn::Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride = 1, int64_t groups = 1,
                                    int64_t dilation = 1) {
  return detail::conv2d(in, out, 3, stride, /*padding=*/dilation, groups, /*bias=*/false, dilation);
}
std::shared_ptr<nn::Conv2d> conv1x1(int64_t in, int64_t out, int64_t stride = 1) {
  return detail::conv2d(in, out, 1, stride, 0, 1, /*bias=*/false);
}
}  // namespace

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride_, std::shared_ptr<nn::Sequential> ds,
                       int64_t groups, int64_t base_width, int64_t dilation)
    : Module("BasicBlock", {"x"}), stride(stride_) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (groups != 1 || base_width != 64) throw Error("BasicBlock only supports groups=1 and base_width=64");
  if (dilation > 1) throw Error("BasicBlock: dilation > 1 is not supported");
  conv1 = register_module("conv1", conv3x3(inplanes, planes, stride));
  bn1 = register_module("bn1", make<nn::BatchNorm2d>(planes));
  relu = register_module("relu", make<nn::ReLU>(true));
  conv2 = register_module("conv2", conv3x3(planes, planes));
  bn2 = register_module("bn2", make<nn::BatchNorm2d>(planes));
  if (ds) downsample = register_module("downsample", std::move(ds));
}

Value BasicBlock::forward(const std::vector<Value>& args) {
  const Value& x = args[0];
  Value identity = x;
  Value out = (*conv1)(x);
  out = (*bn1)(out);
  out = (*relu)(out);
  out = (*conv2)(out);
  out = (*bn2)(out);
  if (downsample) identity = (*downsample)(x);
  out += identity;
  out = (*relu)(out);
  return out;
}

Bottleneck::Bottleneck(int64_t inplanes, int64_t planes, int64_t stride_, std::shared_ptr<nn::Sequential> ds,
                       int64_t groups, int64_t base_width, int64_t dilation)
    : Module("Bottleneck", {"x"}), stride(stride_) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  // int(planes * (base_width / 64.0)) * groups
  const auto width =
      static_cast<int64_t>(static_cast<double>(planes) * (static_cast<double>(base_width) / 64.0)) * groups;
  conv1 = register_module("conv1", conv1x1(inplanes, width));
  bn1 = register_module("bn1", make<nn::BatchNorm2d>(width));
  conv2 = register_module("conv2", conv3x3(width, width, stride, groups, dilation));
  bn2 = register_module("bn2", make<nn::BatchNorm2d>(width));
  conv3 = register_module("conv3", conv1x1(width, planes * expansion));
  bn3 = register_module("bn3", make<nn::BatchNorm2d>(planes * expansion));
  relu = register_module("relu", make<nn::ReLU>(true));
  if (ds) downsample = register_module("downsample", std::move(ds));
}

Value Bottleneck::forward(const std::vector<Value>& args) {
  const Value& x = args[0];
  Value identity = x;
  Value out = (*conv1)(x);
  out = (*bn1)(out);
  out = (*relu)(out);
  out = (*conv2)(out);
  out = (*bn2)(out);
  out = (*relu)(out);
  out = (*conv3)(out);
  out = (*bn3)(out);
  if (downsample) identity = (*downsample)(x);
  out += identity;
  out = (*relu)(out);
  return out;
}

ResNet::ResNet(Block block, std::vector<int64_t> layers, int64_t num_classes, bool zero_init_residual,
               int64_t groups, int64_t width_per_group, std::vector<bool> replace_stride_with_dilation)
    : Module("ResNet", {"x"}), groups_(groups), base_width_(width_per_group) {
  annotate("x", "torch.Tensor");  // forward(self, x: Tensor) -> Tensor
  annotate("return", "torch.Tensor");
  if (layers.size() != 4)
    throw Error("ResNet: layers must hold 4 block counts, got " + std::to_string(layers.size()));
  if (replace_stride_with_dilation.size() != 3)
    throw Error("ResNet: replace_stride_with_dilation should be a 3-element list, got " +
                std::to_string(replace_stride_with_dilation.size()) + " elements");
  const int64_t expansion = block == Block::basic ? BasicBlock::expansion : Bottleneck::expansion;
  conv1 = register_module("conv1", detail::conv2d(3, inplanes_, 7, 2, 3, 1, /*bias=*/false));
  bn1 = register_module("bn1", make<nn::BatchNorm2d>(inplanes_));
  relu = register_module("relu", make<nn::ReLU>(true));
  maxpool = register_module("maxpool", make<nn::MaxPool2d>(3, 2, 1));
  layer1 = register_module("layer1", make_layer(block, 64, layers[0], 1, false));
  layer2 = register_module("layer2", make_layer(block, 128, layers[1], 2, replace_stride_with_dilation[0]));
  layer3 = register_module("layer3", make_layer(block, 256, layers[2], 2, replace_stride_with_dilation[1]));
  layer4 = register_module("layer4", make_layer(block, 512, layers[3], 2, replace_stride_with_dilation[2]));
  avgpool = register_module("avgpool", make<nn::AdaptiveAvgPool2d>(nn::PoolArg{1, 1}));
  fc = register_module("fc", make<nn::Linear>(512 * expansion, num_classes));

  detail::init_weights(*this, detail::ConvInit::kaiming_normal_fan_out_relu, detail::LinearInit::none);
  if (zero_init_residual) {
    torch::NoGradGuard no_grad;
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* b = dynamic_cast<Bottleneck*>(m.get())) b->bn3->weight.zero_();
      if (auto* b = dynamic_cast<BasicBlock*>(m.get())) b->bn2->weight.zero_();
    }
  }
}

std::shared_ptr<nn::Sequential> ResNet::make_layer(Block block, int64_t planes, int64_t blocks,
                                                   int64_t stride, bool dilate) {
  const int64_t expansion = block == Block::basic ? BasicBlock::expansion : Bottleneck::expansion;
  auto make_block = [&](int64_t inplanes, int64_t s, std::shared_ptr<nn::Sequential> ds,
                        int64_t dilation) -> std::shared_ptr<Module> {
    if (block == Block::basic)
      return make<BasicBlock>(inplanes, planes, s, std::move(ds), groups_, base_width_, dilation);
    return make<Bottleneck>(inplanes, planes, s, std::move(ds), groups_, base_width_, dilation);
  };
  std::shared_ptr<nn::Sequential> downsample;
  const int64_t previous_dilation = dilation_;
  if (dilate) {
    dilation_ *= stride;
    stride = 1;
  }
  if (stride != 1 || inplanes_ != planes * expansion)
    downsample = detail::sequential(
        {conv1x1(inplanes_, planes * expansion, stride), make<nn::BatchNorm2d>(planes * expansion)});
  std::vector<std::shared_ptr<Module>> layers;
  layers.push_back(make_block(inplanes_, stride, downsample, previous_dilation));
  inplanes_ = planes * expansion;
  for (int64_t i = 1; i < blocks; ++i) layers.push_back(make_block(inplanes_, 1, nullptr, dilation_));
  return detail::sequential(std::move(layers));
}

Value ResNet::forward(const std::vector<Value>& args) {
  Value x = (*conv1)(args[0]);
  x = (*bn1)(x);
  x = (*relu)(x);
  x = (*maxpool)(x);
  x = (*layer1)(x);
  x = (*layer2)(x);
  x = (*layer3)(x);
  x = (*layer4)(x);
  x = (*avgpool)(x);
  x = fx::call("torch.flatten", x, 1);
  x = (*fc)(x);
  return x;
}

std::shared_ptr<ResNet> resnet18(int64_t num_classes) {
  return make<ResNet>(ResNet::Block::basic, std::vector<int64_t>{2, 2, 2, 2}, num_classes);
}

std::shared_ptr<ResNet> resnet50(int64_t num_classes) {
  return make<ResNet>(ResNet::Block::bottleneck, std::vector<int64_t>{3, 4, 6, 3}, num_classes);
}

}  // namespace fx::models
