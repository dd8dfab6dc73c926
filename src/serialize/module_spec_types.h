#pragma once
// The table behind fx::module_spec and fx::make_module: for every torch.nn
// class fxcpp has, its constructor's parameters, how to read them back from
// a module, and how to construct one from them.

#include <fx/argument.h>
#include <fx/module.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx::detail {

// A constructor parameter: its name and, unless it is required, its default.
struct SpecParam {
  SpecParam(const char* n) : name(n) {}
  SpecParam(const char* n, Argument d) : name(n), default_value(std::move(d)) {}
  std::string name;
  std::optional<Argument> default_value;
};

// The keyword arguments of one make_module call, defaults filled in, read as
// the kinds PyTorch's constructor accepts. Each getter throws fx::Error naming
// the type, the argument and the kind it got.
class SpecArgs {
 public:
  SpecArgs(std::string type, Kwargs bound) : type_(std::move(type)), bound_(std::move(bound)) {}
  int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;  // an int is a float too, as in Python
  bool boolean(const std::string& name) const;
  std::string str(const std::string& name) const;
  std::optional<int64_t> optional_integer(const std::string& name) const;
  std::optional<double> optional_real(const std::string& name) const;
  std::optional<bool> optional_boolean(const std::string& name) const;
  // An int or a tuple (or list) of ints: conv sizes, LayerNorm's normalized_shape.
  std::vector<int64_t> integers(const std::string& name) const;
  // None (empty), a float or int, or a tuple of them: Upsample's scale_factor.
  std::vector<double> reals_or_none(const std::string& name) const;
  // None (empty), an int, or a tuple of ints: Upsample's size.
  std::vector<int64_t> integers_or_none(const std::string& name) const;
  // An int or a tuple of ints and Nones: pooling sizes.
  nn::PoolArg pool(const std::string& name) const;
  std::optional<nn::PoolArg> optional_pool(const std::string& name) const;

 private:
  const Argument& at(const std::string& name) const;
  [[noreturn]] void wrong_kind(const std::string& name, const char* wanted, const Argument& got) const;
  std::string type_;
  Kwargs bound_;
};

// One torch.nn class: `describe` gives its arguments' values in `params`'
// order; `make` constructs it.
struct SpecType {
  std::string type;
  std::vector<SpecParam> params;
  std::function<Args(const Module&)> describe;
  std::function<std::shared_ptr<torch::nn::Module>(const SpecArgs&)> make;
};

// Every class fxcpp can describe and construct (module_spec_types.cpp).
const std::vector<SpecType>& spec_types();

}  // namespace fx::detail
