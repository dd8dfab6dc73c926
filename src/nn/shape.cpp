// torch/nn/modules/flatten.py, upsampling.py, pixelshuffle.py
#include <fx/nn/shape.h>

#include "python_values.h"

namespace fx::nn {

using namespace detail;

Flatten::Flatten(int64_t start, int64_t end)
    : StandardModule("torch.nn.Flatten", {"input"}), start_dim(start), end_dim(end) {}
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}
Value Flatten::forward(const std::vector<Value>& args) { return args[0].flatten(start_dim, end_dim); }
ModulePtr Flatten::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Flatten>(start_dim, end_dim), *this, device);
}

Unflatten::Unflatten(int64_t dim_, std::vector<int64_t> sizes)
    : StandardModule("torch.nn.Unflatten", {"input"}), dim(dim_), unflattened_size(std::move(sizes)) {
  if (unflattened_size.empty()) throw Error("torch.nn.Unflatten: unflattened_size must not be empty");
}
std::string Unflatten::extra_repr() const {
  return "dim=" + std::to_string(dim) + ", unflattened_size=" + py_tuple(unflattened_size);
}
Value Unflatten::forward(const std::vector<Value>& args) {
  return args[0].unflatten(dim, tuple_of(unflattened_size));
}
ModulePtr Unflatten::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Unflatten>(dim, unflattened_size), *this, device);
}

Upsample::Upsample(Options options_)
    : StandardModule("torch.nn.Upsample", {"input"}), options(std::move(options_)) {
  if (!options.size.empty() && !options.scale_factor.empty())
    throw Error("torch.nn.Upsample: ValueError: only one of size or scale_factor should be defined");
}

// Upsample keeps an int/float or a tuple, as given.
Value Upsample::size_value() const {
  if (options.size.empty()) return Value();
  if (options.size.size() == 1) return Value(options.size[0]);
  return tuple_of(options.size);
}
Value Upsample::scale_factor_value() const {
  if (options.scale_factor.empty()) return Value();
  if (options.scale_factor.size() == 1) return Value(options.scale_factor[0]);
  return Value::tuple(std::vector<Value>(options.scale_factor.begin(), options.scale_factor.end()));
}

std::string Upsample::extra_repr() const {
  std::string info;
  if (!options.scale_factor.empty()) {
    const auto& s = options.scale_factor;
    if (s.size() == 1) {
      info = "scale_factor=" + py_float(s[0]);
    } else {
      info = "scale_factor=(";
      for (size_t i = 0; i < s.size(); ++i) info += (i ? ", " : "") + py_float(s[i]);
      info += ")";
    }
  } else {
    info = "size=" + (options.size.empty()       ? std::string("None")
                      : options.size.size() == 1 ? std::to_string(options.size[0])
                                                 : py_tuple(options.size));
  }
  return info + ", mode=" + py_str(options.mode);  // repr(mode) since torch 2.x
}

Value Upsample::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.interpolate", args[0], size_value(), scale_factor_value(),
                  options.mode, optional_value(options.align_corners),
                  kw("recompute_scale_factor", optional_value(options.recompute_scale_factor)));
}

ModulePtr Upsample::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<Upsample>(options), *this, device);
}

PixelShuffle::PixelShuffle(int64_t factor)
    : StandardModule("torch.nn.PixelShuffle", {"input"}), upscale_factor(factor) {}
std::string PixelShuffle::extra_repr() const { return "upscale_factor=" + std::to_string(upscale_factor); }
Value PixelShuffle::forward(const std::vector<Value>& args) {
  return fx::call("torch.nn.functional.pixel_shuffle", args[0], upscale_factor);
}
ModulePtr PixelShuffle::clone(const OptionalDevice& device) const {
  return finish_clone(std::make_shared<PixelShuffle>(upscale_factor), *this, device);
}

}  // namespace fx::nn
