// The standard modules. Each forward is written with fx::Values exactly as
// torch.nn writes it in Python, so that tracing through one (a Tracer that
// does not treat it as a leaf) records what torch.fx records.
#include <fx/nn.h>

#include <torch/nn/init.h>

#include "../ir/repr.h"

#include <cmath>

namespace fx::nn {

namespace {
// PyTorch's reset_parameters for Linear/Conv: kaiming_uniform_(a=sqrt(5)),
// bias uniform in +-1/sqrt(fan_in).
void init_weight_and_bias(at::Tensor& weight, at::Tensor& bias, int64_t fan_in) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

Value tuple_of(const std::vector<int64_t>& v) {
  std::vector<Value> items(v.begin(), v.end());
  return Value::tuple(std::move(items));
}

Value optional_tensor(const at::Tensor& t) { return t.defined() ? Value(t) : Value(); }

std::string py_bool(bool b) { return b ? "True" : "False"; }
std::string py_float(double d) { return detail::repr_float(d); }
std::string py_tuple(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + (v.size() == 1 ? ",)" : ")");
}
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : StandardModule("torch.nn.Linear", {"input"}), in_features(in), out_features(out) {
  weight = register_parameter("weight", torch::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
  init_weight_and_bias(weight, bias, in);
}

Value Linear::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.linear", args[0], Value(weight), optional_tensor(bias));
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + py_bool(bias.defined());
}

// torch.nn.modules.conv._ConvNd.extra_repr
std::string Conv2d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(stride);
  if (padding != std::vector<int64_t>{0, 0}) s += ", padding=" + py_tuple(padding);
  if (dilation != std::vector<int64_t>{1, 1}) s += ", dilation=" + py_tuple(dilation);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

Conv2d::Conv2d(int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride_,
               std::vector<int64_t> padding_, std::vector<int64_t> dilation_, int64_t groups_, bool with_bias)
    : StandardModule("torch.nn.Conv2d", {"input"}),
      in_channels(in),
      out_channels(out),
      groups(groups_),
      kernel_size(std::move(kernel)),
      stride(std::move(stride_)),
      padding(std::move(padding_)),
      dilation(std::move(dilation_)) {
  if (kernel_size.size() != 2 || stride.size() != 2 || padding.size() != 2 || dilation.size() != 2)
    throw Error("Conv2d: kernel_size, stride, padding and dilation take two values each");
  if (groups <= 0 || in % groups != 0 || out % groups != 0)
    throw Error("Conv2d: in_channels and out_channels must be divisible by groups");
  weight = register_parameter("weight", torch::empty({out, in / groups, kernel_size[0], kernel_size[1]}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
  init_weight_and_bias(weight, bias, in / groups * kernel_size[0] * kernel_size[1]);
}

Value Conv2d::forward(const std::vector<Value>& args) {
  return fx::call("torch.conv2d", args[0], Value(weight), optional_tensor(bias), tuple_of(stride),
                  tuple_of(padding), tuple_of(dilation), groups);
}

std::string BatchNorm2d::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", momentum=" + py_float(momentum) +
         ", affine=True, track_running_stats=True";
}

BatchNorm2d::BatchNorm2d(int64_t n, double eps_, double momentum_)
    : StandardModule("torch.nn.BatchNorm2d", {"input"}), num_features(n), eps(eps_), momentum(momentum_) {
  weight = register_parameter("weight", torch::ones({n}));
  bias = register_parameter("bias", torch::zeros({n}));
  running_mean = register_buffer("running_mean", torch::zeros({n}));
  running_var = register_buffer("running_var", torch::ones({n}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
}

Value BatchNorm2d::forward(const std::vector<Value>& args) {
  if (is_training()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return fx::call("torch.nn.functional.batch_norm", args[0], Value(running_mean), Value(running_var),
                  Value(weight), Value(bias), is_training(), momentum, eps);
}

std::string ReLU::extra_repr() const { return inplace ? "inplace=True" : ""; }
std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=" + py_bool(inplace); }
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

ReLU::ReLU(bool inplace_) : StandardModule("torch.nn.ReLU", {"input"}), inplace(inplace_) {}
Value ReLU::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.relu", args[0], kw("inplace", inplace));
}

Dropout::Dropout(double p_, bool inplace_)
    : StandardModule("torch.nn.Dropout", {"input"}), p(p_), inplace(inplace_) {
  if (p < 0.0 || p > 1.0) throw Error("Dropout: p must be between 0 and 1, got " + std::to_string(p));
}
Value Dropout::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.dropout", args[0], p, is_training(), inplace);
}

Flatten::Flatten(int64_t start, int64_t end)
    : StandardModule("torch.nn.Flatten", {"input"}), start_dim(start), end_dim(end) {}
Value Flatten::forward(const std::vector<Value>& args) { return args[0].flatten(start_dim, end_dim); }

Identity::Identity() : StandardModule("torch.nn.Identity", {"input"}) {}
Value Identity::forward(const std::vector<Value>& args) { return args[0]; }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules)
    : Module("torch.nn.Sequential", {"input"}) {
  for (auto& m : modules) append(std::move(m));
}

void Sequential::append(std::shared_ptr<Module> m) {
  if (!m) throw Error("Sequential: cannot append a null module");
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

Value Sequential::forward(const std::vector<Value>& args) {
  Value x = args[0];
  for (auto& m : modules_) x = (*m)(x);
  return x;
}

}  // namespace fx::nn
