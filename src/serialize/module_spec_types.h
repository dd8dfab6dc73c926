#pragma once
// The table behind fx::module_spec and fx::make_module: for every torch.nn
// class fxcpp has, its constructor's parameters, how to read them back from
// a module, and how to construct one from them.

#include <fx/argument.h>
#include <fx/error.h>
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

// Every class fxcpp can describe and construct, by family.
const std::vector<SpecType>& spec_types();       // module_spec_types.cpp: all of them
std::vector<SpecType> elementwise_spec_types();  // module_spec_types.cpp: containers, activations, ...
std::vector<SpecType> spatial_spec_types();      // module_spec_spatial.cpp: conv, norms, pooling, embeddings
std::vector<SpecType> sequence_spec_types();     // module_spec_sequence.cpp: RNNs, attention, transformer

// torch 2.x's `bias` flag of the norms and TransformerEncoderLayer: fx::nn's
// classes always learn a bias where they learn a weight, so bias=False is
// refused there; without affine parameters the flag changes nothing (PyTorch
// holds None either way) and is accepted.
inline void spec_require_bias(const SpecArgs& a, const std::string& type, bool affine) {
  if (affine && !a.boolean("bias"))
    throw Error(type + ": bias=False is not supported by fxcpp's fx::nn (its " + type +
                " always has a bias when it has a weight)");
}

// ---- for the tables: values as Python holds them ----------------------------

inline Argument spec_tuple(const std::vector<int64_t>& v) {
  return Tuple{std::vector<Argument>(v.begin(), v.end())};
}

template <class T>
Argument spec_optional(const std::optional<T>& v) {
  return v ? Argument(*v) : Argument(None);
}

// An int or a tuple of ints and Nones, as the pooling module was given it.
inline Argument spec_pool(const nn::PoolArg& p) {
  auto item = [](const std::optional<int64_t>& i) { return spec_optional(i); };
  if (p.is_int()) return item(p.items()[0]);
  Tuple t;
  for (const auto& i : p.items()) t.items.push_back(item(i));
  return t;
}

// Upsample's size and scale_factor: None, one value (Python's int or float), or a tuple.
template <class T>
Argument spec_one_or_tuple(const std::vector<T>& v) {
  if (v.empty()) return None;
  if (v.size() == 1) return v[0];
  return Tuple{std::vector<Argument>(v.begin(), v.end())};
}

// A leaf module of class M.
template <class M>
SpecType spec_leaf(const char* type, std::vector<SpecParam> params, std::function<Args(const M&)> describe,
                   std::function<std::shared_ptr<torch::nn::Module>(const SpecArgs&)> make) {
  return {
      type, std::move(params),
      [describe = std::move(describe), type](const Module& m) {
        const auto* typed = dynamic_cast<const M*>(&m);
        if (!typed)
          throw Error(std::string("module_spec: a module named ") + type + " is not fxcpp's class for it");
        return describe(*typed);
      },
      std::move(make)};
}

}  // namespace fx::detail
