#pragma once
// Convolutions: torch.nn.Conv1d/2d/3d and ConvTranspose1d/2d
// (torch/nn/modules/conv.py). Size arguments take one value (repeated, as
// Python's int) or one per spatial dimension, and are kept as tuples, as
// PyTorch keeps them.

#include <fx/nn/standard_module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fx::nn {

// torch.nn.modules.conv._ConvNd: weight (out, in/groups, *kernel) or, when
// transposed, (in, out/groups, *kernel); PyTorch's kaiming-uniform init.
// padding_mode 'zeros' pads in the convolution, 'reflect', 'replicate' and
// 'circular' with F.pad first.
class ConvNd : public StandardModule {
 public:
  std::string extra_repr() const override;
  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size, stride, padding, dilation, output_padding;
  int64_t groups;
  std::string padding_mode;
  at::Tensor weight, bias;

 protected:
  ConvNd(std::string type_name, size_t dims, bool transposed, int64_t in_channels, int64_t out_channels,
         std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
         std::vector<int64_t> dilation, std::vector<int64_t> output_padding, int64_t groups, bool bias,
         std::string padding_mode);
  // F.convNd(input, weight, bias, stride, padding, dilation, groups), through F.pad for non-zero modes.
  Value conv_forward(const Value& input) const;
  size_t dims_;
  bool transposed_;
};

// A class name cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FX_NN_CONV(Name)                                                              \
  class Name : public ConvNd {                                                        \
   public:                                                                            \
    Name(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, \
         std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},       \
         std::vector<int64_t> dilation = {1}, int64_t groups = 1, bool bias = true,   \
         std::string padding_mode = "zeros");                                         \
    Value forward(const std::vector<Value>& args) override;                           \
    ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;      \
  };
// torch.nn.ConvNd(in_channels, out_channels, kernel_size, stride=1, padding=0,
//                 dilation=1, groups=1, bias=True, padding_mode='zeros')
FX_NN_CONV(Conv1d)
FX_NN_CONV(Conv2d)
FX_NN_CONV(Conv3d)
#undef FX_NN_CONV

// torch.nn.ConvTransposeNd(in_channels, out_channels, kernel_size, stride=1,
//   padding=0, output_padding=0, groups=1, bias=True, dilation=1,
//   padding_mode='zeros'); forward(input, output_size=None) chooses the
// output padding that reaches output_size, as PyTorch's _output_padding.
#define FX_NN_CONV_TRANSPOSE(Name)                                                        \
  class Name : public ConvNd {                                                            \
   public:                                                                                \
    Name(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,     \
         std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},           \
         std::vector<int64_t> output_padding = {0}, int64_t groups = 1, bool bias = true, \
         std::vector<int64_t> dilation = {1}, std::string padding_mode = "zeros");        \
    Value forward(const std::vector<Value>& args) override;                               \
    ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;          \
  };
FX_NN_CONV_TRANSPOSE(ConvTranspose1d)
FX_NN_CONV_TRANSPOSE(ConvTranspose2d)
#undef FX_NN_CONV_TRANSPOSE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace fx::nn
