#pragma once
// How fx::nn modules spell their configuration as Python does, in extra_repr
// and in the arguments their forwards pass to F.*.

#include <fx/value.h>

#include "../ir/repr.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fx::nn::detail {

inline const std::string kF = "torch.nn.functional.";  // where F.* lives

inline std::string py_bool(bool b) { return b ? "True" : "False"; }
inline std::string py_float(double d) { return fx::detail::repr_float(d); }
inline std::string py_str(const std::string& s) { return fx::detail::repr_string(s); }
// (1, 2), (4,)
inline std::string py_tuple(const std::vector<int64_t>& v) { return fx::detail::repr_int_tuple(v); }
inline std::string py_int(int64_t i) { return std::to_string(i); }
template <class T>
std::string py_optional(const std::optional<T>& v) {
  if (!v) return "None";
  if constexpr (std::is_same_v<T, bool>)
    return py_bool(*v);
  else if constexpr (std::is_floating_point_v<T>)
    return py_float(*v);
  else
    return py_int(*v);
}

inline Value tuple_of(const std::vector<int64_t>& v) {
  std::vector<Value> items(v.begin(), v.end());
  return Value::tuple(std::move(items));
}
inline Value optional_tensor(const at::Tensor& t) { return t.defined() ? Value(t) : Value(); }
template <class T>
Value optional_value(const std::optional<T>& v) {
  return v ? Value(*v) : Value();
}

// torch.nn.modules.utils._ntuple: one value repeated n times, or n values.
// Throws fx::Error naming the module and the argument otherwise.
std::vector<int64_t> ntuple(const std::string& module, const std::string& what, std::vector<int64_t> v,
                            size_t n);

// Python's `a is b` for forward values: the same tensor, or the same node
// while tracing.
bool same_object(const Value& a, const Value& b);

// F._canonical_mask: a bool mask becomes a float one of `like`'s dtype, -inf
// where it is true; a float mask is kept, and None stays None. A traced mask
// stops tracing, as in Python, where its dtype decides what to do.
Value canonical_mask(const std::string& module, const Value& mask, const std::string& name,
                     const Value& like);

}  // namespace fx::nn::detail
