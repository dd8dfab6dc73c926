// torch/nn/modules/conv.py
#include <fx/nn/conv.h>
#include <fx/nn/init.h>

#include <torch/nn/init.h>

#include "python_values.h"

#include <cmath>

namespace fx::nn {

using namespace detail;

ConvNd::ConvNd(std::string type_name, size_t dims, bool transposed, int64_t in, int64_t out,
               std::vector<int64_t> kernel, std::vector<int64_t> stride_, std::vector<int64_t> padding_,
               std::vector<int64_t> dilation_, std::vector<int64_t> output_padding_, int64_t groups_,
               bool with_bias, std::string padding_mode_)
    : StandardModule(std::move(type_name), transposed ? std::vector<Param>{"input", {"output_size", Value()}}
                                                      : std::vector<Param>{"input"}),
      in_channels(in),
      out_channels(out),
      groups(groups_),
      padding_mode(std::move(padding_mode_)),
      dims_(dims),
      transposed_(transposed) {
  const std::string& name = this->type_name();
  kernel_size = ntuple(name, "kernel_size", std::move(kernel), dims);
  stride = ntuple(name, "stride", std::move(stride_), dims);
  padding = ntuple(name, "padding", std::move(padding_), dims);
  dilation = ntuple(name, "dilation", std::move(dilation_), dims);
  output_padding = ntuple(name, "output_padding", std::move(output_padding_), dims);
  if (groups <= 0) throw Error(name + ": ValueError: groups must be a positive integer");
  if (in < 0 || out < 0) throw Error(name + ": in_channels and out_channels must not be negative");
  if (in % groups != 0) throw Error(name + ": ValueError: in_channels must be divisible by groups");
  if (out % groups != 0) throw Error(name + ": ValueError: out_channels must be divisible by groups");
  if (padding_mode != "zeros" && padding_mode != "reflect" && padding_mode != "replicate" &&
      padding_mode != "circular")
    throw Error(
        name + ": ValueError: padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', got " +
        py_str(padding_mode));
  if (transposed && padding_mode != "zeros")
    throw Error(name + ": ValueError: Only \"zeros\" padding mode is supported for " +
                name.substr(name.rfind('.') + 1));
  std::vector<int64_t> shape =
      transposed ? std::vector<int64_t>{in, out / groups} : std::vector<int64_t>{out, in / groups};
  shape.insert(shape.end(), kernel_size.begin(), kernel_size.end());
  weight = register_parameter("weight", torch::empty(shape));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
  // _ConvNd.reset_parameters
  if (init_skipped()) return;
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = weight.size(1);
    for (int64_t k : kernel_size) fan_in *= k;
    if (fan_in != 0) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      torch::nn::init::uniform_(bias, -bound, bound);
    }
  }
}

// _ConvNd.extra_repr
std::string ConvNd::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(stride);
  if (padding != std::vector<int64_t>(dims_, 0)) s += ", padding=" + py_tuple(padding);
  if (dilation != std::vector<int64_t>(dims_, 1)) s += ", dilation=" + py_tuple(dilation);
  if (output_padding != std::vector<int64_t>(dims_, 0)) s += ", output_padding=" + py_tuple(output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}

// ConvNd._conv_forward
Value ConvNd::conv_forward(const Value& input) const {
  const std::string fn = "torch.conv" + std::to_string(dims_) + "d";
  if (padding_mode != "zeros") {
    std::vector<int64_t> pad;  // _reversed_padding_repeated_twice
    for (size_t i = dims_; i-- > 0;) pad.insert(pad.end(), {padding[i], padding[i]});
    Value padded = fx::call("torch.nn.functional.pad", input, tuple_of(pad), kw("mode", padding_mode));
    return fx::call(fn, padded, Value(weight), optional_tensor(bias), tuple_of(stride),
                    tuple_of(std::vector<int64_t>(dims_, 0)), tuple_of(dilation), groups);
  }
  return fx::call(fn, input, Value(weight), optional_tensor(bias), tuple_of(stride), tuple_of(padding),
                  tuple_of(dilation), groups);
}

#define FX_NN_CONV_DEFS(Name, N)                                                                             \
  Name::Name(int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride_,             \
             std::vector<int64_t> padding_, std::vector<int64_t> dilation_, int64_t groups_, bool with_bias, \
             std::string padding_mode_)                                                                      \
      : ConvNd("torch.nn." #Name, N, false, in, out, std::move(kernel), std::move(stride_),                  \
               std::move(padding_), std::move(dilation_), {0}, groups_, with_bias,                           \
               std::move(padding_mode_)) {}                                                                  \
  Value Name::forward(const std::vector<Value>& args) { return conv_forward(args[0]); }                      \
  ModulePtr Name::clone(const OptionalDevice& device) const {                                                \
    return finish_clone(std::make_shared<Name>(in_channels, out_channels, kernel_size, stride, padding,      \
                                               dilation, groups, bias.defined(), padding_mode),              \
                        *this, device);                                                                      \
  }
FX_NN_CONV_DEFS(Conv1d, 1)
FX_NN_CONV_DEFS(Conv2d, 2)
FX_NN_CONV_DEFS(Conv3d, 3)
#undef FX_NN_CONV_DEFS

namespace {
// _ConvTransposeNd._output_padding: the output padding that gives output_size.
Value output_padding_for(const std::string& module, const Value& input, const Value& output_size,
                         const std::vector<int64_t>& output_padding, const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& padding, const std::vector<int64_t>& kernel_size,
                         const std::vector<int64_t>& dilation) {
  if (output_size.is_none()) return tuple_of(output_padding);
  const at::Tensor x = input.tensor();
  const size_t n = kernel_size.size();
  const size_t non_spatial = x.dim() == static_cast<int64_t>(n) + 2 ? 2 : 1;
  std::vector<int64_t> sizes;
  for (const Value& v : output_size.items()) sizes.push_back(v.to_int());
  if (sizes.size() == non_spatial + n)
    sizes.erase(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(non_spatial));
  if (sizes.size() != n)
    throw Error(module + ": ValueError: ConvTranspose" + std::to_string(n) + "D: for " +
                std::to_string(x.dim()) + "D input, output_size must have " + std::to_string(n) + " or " +
                std::to_string(non_spatial + n) + " elements (got " + std::to_string(sizes.size()) + ")");
  std::vector<int64_t> result;
  for (size_t d = 0; d < n; ++d) {
    const int64_t min_size = (x.size(static_cast<int64_t>(d + non_spatial)) - 1) * stride[d] -
                             2 * padding[d] + dilation[d] * (kernel_size[d] - 1) + 1;
    const int64_t max_size = min_size + stride[d] - 1;
    if (sizes[d] < min_size || sizes[d] > max_size)
      throw Error(module + ": ValueError: requested an output size of " + py_tuple(sizes) +
                  ", but valid size " + std::to_string(d) + " ranges from " + std::to_string(min_size) +
                  " to " + std::to_string(max_size));
    result.push_back(sizes[d] - min_size);
  }
  return Value::list(std::vector<Value>(result.begin(), result.end()));
}
}  // namespace

#define FX_NN_CONV_TRANSPOSE_DEFS(Name, N)                                                                \
  Name::Name(int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride_,          \
             std::vector<int64_t> padding_, std::vector<int64_t> output_padding_, int64_t groups_,        \
             bool with_bias, std::vector<int64_t> dilation_, std::string padding_mode_)                   \
      : ConvNd("torch.nn." #Name, N, true, in, out, std::move(kernel), std::move(stride_),                \
               std::move(padding_), std::move(dilation_), std::move(output_padding_), groups_, with_bias, \
               std::move(padding_mode_)) {}                                                               \
  Value Name::forward(const std::vector<Value>& args) {                                                   \
    Value op = output_padding_for(type_name(), args[0], args[1], output_padding, stride, padding,         \
                                  kernel_size, dilation);                                                 \
    return fx::call("torch.conv_transpose" #N "d", args[0], Value(weight), optional_tensor(bias),         \
                    tuple_of(stride), tuple_of(padding), op, groups, tuple_of(dilation));                 \
  }                                                                                                       \
  ModulePtr Name::clone(const OptionalDevice& device) const {                                             \
    return finish_clone(                                                                                  \
        std::make_shared<Name>(in_channels, out_channels, kernel_size, stride, padding, output_padding,   \
                               groups, bias.defined(), dilation, padding_mode),                           \
        *this, device);                                                                                   \
  }
FX_NN_CONV_TRANSPOSE_DEFS(ConvTranspose1d, 1)
FX_NN_CONV_TRANSPOSE_DEFS(ConvTranspose2d, 2)
#undef FX_NN_CONV_TRANSPOSE_DEFS

}  // namespace fx::nn
