#pragma once
// Everything fxcpp knows about one torch.nn class, in one record: how it is
// constructed and saved (fx::module_spec / fx::make_module), what the graph
// drawer shows of it (torch.typename and __constants__), and the C++ that
// export_cpp writes for a call of it.
//
// fx::nn's own classes register their records next to them, in
// src/nn/<family>_traits.cpp. A module of your own registers one with
// fx::nn::register_module_traits; docs/nn.md, "Adding a module", walks
// through it.

#include <fx/argument.h>
#include <fx/error.h>
#include <fx/module.h>
#include <fx/nn/pooling.h>
#include <fx/nn/standard_module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::nn {

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
  PoolArg pool(const std::string& name) const;
  std::optional<PoolArg> optional_pool(const std::string& name) const;

 private:
  const Argument& at(const std::string& name) const;
  [[noreturn]] void wrong_kind(const std::string& name, const char* wanted, const Argument& got) const;
  std::string type_;
  Kwargs bound_;
};

// What a module's C++ emission can ask of export_cpp while it writes one
// call_module node. Expressions are C++ source text.
class CppModuleCall {
 public:
  virtual ~CppModuleCall() = default;
  // The call's one argument, a tensor. Refuses a call that passes any other
  // of forward's parameters: the emission translates the defaults only.
  virtual std::string input() = 0;
  // forward's parameter `i` as the call passes it; nullopt when it is not
  // passed or is None.
  virtual std::optional<std::string> argument(size_t i) = 0;
  // forward's parameter `i`, which the call must pass as a tensor.
  virtual std::string tensor_argument(size_t i) = 0;
  // The member holding the module's tensor at `name` ("weight", "out_proj.bias").
  virtual std::string weight(const std::string& name) = 0;
  // A statement before the call's (a counter's update, a temporary).
  virtual void line(const std::string& statement) = 0;
  // A fresh local name derived from `base`.
  virtual std::string temp(const std::string& base) = 0;
  // Throws the fx::Error that names the node; `why` completes "node 'x' ...".
  [[noreturn]] virtual void fail(const std::string& why) = 0;
  // C++ literals.
  virtual std::string real(double d) = 0;
  virtual std::string str(const std::string& s) = 0;
  virtual std::string int_list(const std::vector<std::string>& items) = 0;

  std::string weight_or_none(const at::Tensor& t, const std::string& name) {
    return t.defined() ? weight(name) : "{}";
  }
  static std::string boolean(bool b) { return b ? "true" : "false"; }
  std::string ints(const std::vector<int64_t>& v) {
    std::vector<std::string> items;
    for (int64_t i : v) items.push_back(std::to_string(i));
    return int_list(items);
  }
};

// The C++ of a call: one tensor, or a std::tuple of `tuple_size` tensors.
struct CppCall {
  std::string expr;
  size_t tuple_size = 0;
};

// (name, str(value)) of each of a class's __constants__, in PyTorch's order.
using ModuleConstants = std::vector<std::pair<std::string, std::string>>;

struct ModuleTraits {
  // torch.nn's public class name, the key: "torch.nn.Conv2d".
  std::string type;
  // torch.typename() of the class, where it differs from `type`:
  // "torch.nn.modules.conv.Conv2d".
  std::string torch_typename;
  // The constructor's parameters, named and ordered as PyTorch's __init__
  // (device and dtype aside).
  std::vector<SpecParam> params;
  // The values of `params`, in order, read back from a module.
  std::function<Args(const Module&)> describe;
  // A module of the class with fresh parameters, as PyTorch's cls(**kwargs).
  std::function<ModulePtr(const SpecArgs&)> make;
  // The class's __constants__; empty for a class without them.
  std::function<ModuleConstants(const Module&)> constants;
  // The C++ of a call (export_cpp); empty: export_cpp refuses the module.
  std::function<CppCall(CppModuleCall&, const Module&)> emit_cpp;
};

// Adds a class. Throws fx::Error if `traits.type` is registered already or
// describe or make is missing. Safe to call while other threads look up.
void register_module_traits(ModuleTraits traits);

// The record of a type name (Module::type_name()), or nullptr.
const ModuleTraits* find_module_traits(std::string_view type);

// Every registered type name, fx::nn's first, in registration order.
std::vector<std::string> module_traits_types();

// ---- writing a record for class M --------------------------------------------
// The functions of a record receive a Module whose type name is the record's;
// these adapters cast it to M once, refusing a module that merely carries the
// name.
namespace detail {
template <class M>
const M& traits_cast(const Module& m, const std::string& type) {
  const auto* typed = dynamic_cast<const M*>(&m);
  if (!typed) throw Error("a module named " + type + " is not fxcpp's class for it (" + m.type_name() + ")");
  return *typed;
}
}  // namespace detail

template <class M>
struct TraitsOf {
  std::string type;
  std::string torch_typename;
  std::vector<SpecParam> params;
  std::function<Args(const M&)> describe;
  std::function<ModulePtr(const SpecArgs&)> make;
  std::function<ModuleConstants(const M&)> constants = {};
  std::function<CppCall(CppModuleCall&, const M&)> emit_cpp = {};

  operator ModuleTraits() && {  // NOLINT(google-explicit-constructor): the tables read as lists of records
    ModuleTraits t{type, std::move(torch_typename), std::move(params), {}, std::move(make), {}, {}};
    t.describe = [f = std::move(describe), type = type](const Module& m) {
      return f(detail::traits_cast<M>(m, type));
    };
    if (constants)
      t.constants = [f = std::move(constants), type = type](const Module& m) {
        return f(detail::traits_cast<M>(m, type));
      };
    if (emit_cpp)
      t.emit_cpp = [f = std::move(emit_cpp), type = type](CppModuleCall& w, const Module& m) {
        return f(w, detail::traits_cast<M>(m, type));
      };
    return t;
  }
};

// ---- values as Python holds them, for describe ----------------------------

inline Argument spec_tuple(const std::vector<int64_t>& v) {
  return Tuple{std::vector<Argument>(v.begin(), v.end())};
}

template <class T>
Argument spec_optional(const std::optional<T>& v) {
  return v ? Argument(*v) : Argument(None);
}

// torch 2.x's `bias` flag of the norms and TransformerEncoderLayer: fx::nn's
// classes always learn a bias where they learn a weight, so bias=False is
// refused there; without affine parameters the flag changes nothing (PyTorch
// holds None either way) and is accepted.
void spec_require_bias(const SpecArgs& a, const std::string& type, bool affine);

}  // namespace fx::nn
