// torch/nn/modules/batchnorm.py, instancenorm.py, normalization.py
#include <fx/nn/normalization.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " or " : "") + std::to_string(dims[i]) + "D";
  return s;
}
}  // namespace

// _NormBase.__init__ and reset_parameters.
NormBase::NormBase(std::string type_name, int64_t n, double eps_, std::optional<double> momentum_,
                   bool affine_, bool track)
    : StandardModule(std::move(type_name), {"input"}),
      num_features(n),
      eps(eps_),
      momentum(momentum_),
      affine(affine_),
      track_running_stats(track) {
  if (n < 0) throw Error(this->type_name() + ": num_features must not be negative, got " + std::to_string(n));
  if (affine) {
    weight = register_parameter("weight", torch::ones({n}));
    bias = register_parameter("bias", torch::zeros({n}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", torch::zeros({n}));
    running_var = register_buffer("running_var", torch::ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  }
}

std::string NormBase::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", momentum=" + py_optional(momentum) +
         ", affine=" + py_bool(affine) + ", bias=" + py_bool(bias.defined()) +
         ", track_running_stats=" + py_bool(track_running_stats);
}

BatchNormNd::BatchNormNd(std::string type_name, std::vector<int64_t> input_dims, int64_t n, double eps_,
                         std::optional<double> momentum_, bool affine_, bool track)
    : NormBase(std::move(type_name), n, eps_, momentum_, affine_, track),
      input_dims_(std::move(input_dims)) {}

// _BatchNorm.forward
Value BatchNormNd::forward(const std::vector<Value>& args) {
  const Value& input = args[0];
  if (!input.has_proxy()) {  // _check_input_dim (a symbolic input's rank is unknown)
    const int64_t d = input.tensor().dim();
    if (std::find(input_dims_.begin(), input_dims_.end(), d) == input_dims_.end())
      throw Error(type_name() + ": ValueError: expected " + dims_text(input_dims_) + " input (got " +
                  std::to_string(d) + "D input)");
  }
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    torch::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!momentum) factor = 1.0 / num_batches_tracked.item<double>();
  }
  const bool bn_training = is_training() || !running_mean.defined();
  const bool use_stats = !is_training() || track_running_stats;
  return fx::call(kF + "batch_norm", input, use_stats ? optional_tensor(running_mean) : Value(),
                  use_stats ? optional_tensor(running_var) : Value(), optional_tensor(weight),
                  optional_tensor(bias), bn_training, factor, eps);
}

#define FX_NN_BATCHNORM_DEFS(Name, ...)                                                                   \
  Name::Name(int64_t n, double eps_, std::optional<double> momentum_, bool affine_, bool track)           \
      : BatchNormNd("torch.nn." #Name, {__VA_ARGS__}, n, eps_, momentum_, affine_, track) {}              \
  ModulePtr Name::clone(const OptionalDevice& device) const {                                             \
    return finish_clone(std::make_shared<Name>(num_features, eps, momentum, affine, track_running_stats), \
                        *this, device);                                                                   \
  }
FX_NN_BATCHNORM_DEFS(BatchNorm1d, 2, 3)
FX_NN_BATCHNORM_DEFS(BatchNorm2d, 4)
FX_NN_BATCHNORM_DEFS(BatchNorm3d, 5)
#undef FX_NN_BATCHNORM_DEFS

InstanceNorm2d::InstanceNorm2d(int64_t n, double eps_, std::optional<double> momentum_, bool affine_,
                               bool track)
    : NormBase("torch.nn.InstanceNorm2d", n, eps_, momentum_, affine_, track) {}

// _InstanceNorm.forward: an unbatched (C, H, W) input is normalized as a batch of one.
Value InstanceNorm2d::forward(const std::vector<Value>& args) {
  Value input = args[0];
  bool unbatched = false;
  if (!input.has_proxy()) {
    const at::Tensor t = input.tensor();
    if (t.dim() != 3 && t.dim() != 4)
      throw Error(type_name() + ": ValueError: expected 3D or 4D input (got " + std::to_string(t.dim()) +
                  "D input)");
    const int64_t feature_dim = t.dim() - 3;
    if (affine && t.size(feature_dim) != num_features)
      throw Error(type_name() + ": ValueError: expected input's size at dim=" + std::to_string(feature_dim) +
                  " to match num_features (" + std::to_string(num_features) +
                  "), but got: " + std::to_string(t.size(feature_dim)) + ".");
    unbatched = t.dim() == 3;
  }
  if (unbatched) input = input.unsqueeze(0);
  Value out = fx::call(kF + "instance_norm", input, optional_tensor(running_mean),
                       optional_tensor(running_var), optional_tensor(weight), optional_tensor(bias),
                       is_training() || !track_running_stats, optional_value(momentum), eps);
  return unbatched ? out.squeeze(0) : out;
}

ModulePtr InstanceNorm2d::clone(const OptionalDevice& device) const {
  return finish_clone(
      std::make_shared<InstanceNorm2d>(num_features, eps, momentum, affine, track_running_stats), *this,
      device);
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine)
    : StandardModule("torch.nn.LayerNorm", {"input"}),
      normalized_shape(std::move(shape)),
      eps(eps_),
      elementwise_affine(affine) {
  for (int64_t s : normalized_shape)
    if (s < 0)
      throw Error("torch.nn.LayerNorm: normalized_shape " + py_tuple(normalized_shape) +
                  " has a negative size");
  if (affine) {
    weight = register_parameter("weight", torch::ones(normalized_shape));
    bias = register_parameter("bias", torch::zeros(normalized_shape));
  }
}

std::string LayerNorm::extra_repr() const {
  return py_tuple(normalized_shape) + ", eps=" + py_float(eps) +
         ", elementwise_affine=" + py_bool(elementwise_affine) + ", bias=" + py_bool(bias.defined());
}

Value LayerNorm::forward(const std::vector<Value>& args) {
  return fx::call(kF + "layer_norm", args[0], tuple_of(normalized_shape), optional_tensor(weight),
                  optional_tensor(bias), eps);
}

ModulePtr LayerNorm::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<LayerNorm>(normalized_shape, eps, elementwise_affine), *this, device);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_)
    : StandardModule("torch.nn.GroupNorm", {"input"}),
      num_groups(groups),
      num_channels(channels),
      eps(eps_),
      affine(affine_) {
  if (groups <= 0 || channels < 0 || channels % groups != 0)
    throw Error("torch.nn.GroupNorm: ValueError: num_channels (" + std::to_string(channels) +
                ") must be divisible by num_groups (" + std::to_string(groups) + ")");
  if (affine) {
    weight = register_parameter("weight", torch::ones({channels}));
    bias = register_parameter("bias", torch::zeros({channels}));
  }
}

std::string GroupNorm::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) + ", eps=" + py_float(eps) +
         ", affine=" + py_bool(affine) + ", bias=" + py_bool(bias.defined());
}

Value GroupNorm::forward(const std::vector<Value>& args) {
  return fx::call(kF + "group_norm", args[0], num_groups, optional_tensor(weight), optional_tensor(bias),
                  eps);
}

ModulePtr GroupNorm::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<GroupNorm>(num_groups, num_channels, eps, affine), *this, device);
}

}  // namespace fx::nn
