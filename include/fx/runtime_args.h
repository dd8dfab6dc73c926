#pragma once
// Reading a registered function's arguments as Python would.
//
// A function registered with fx::register_function (fx/runtime.h) receives
// the call's positional and keyword arguments as a node's call_function gives
// them. bind() matches them to a Python signature, defaults included, and the
// to_* helpers read each value as Python would (an int is a float, a bool an
// int), so that a port of a Python function reads like the Python:
//
//   using namespace fx::runtime;
//   const std::vector<Param> params{req("input"), req("p"), opt("training", true)};
//   fx::register_function(name, fx::make_callable(name, [=](auto& args, auto& kwargs) {
//     auto a = bind(name, params, args, kwargs);
//     at::Tensor input = to_tensor(name, a[0]);
//     ...
//
// A helper that takes `fn` throws fx::Error naming it and what it expected.

#include <fx/error.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fx::runtime {

// ---- a Python signature -----------------------------------------------------
struct Param {
  std::string name;
  std::optional<c10::IValue> default_value;  // nullopt: required
  bool kwonly = false;
};
inline Param req(std::string n) { return Param{std::move(n), std::nullopt, false}; }
inline Param opt(std::string n, c10::IValue d) { return Param{std::move(n), std::move(d), false}; }
inline Param kwo(std::string n, c10::IValue d) { return Param{std::move(n), std::move(d), true}; }
// The parameters of one of torch's Python functions (F.softmax, torch.split,
// ...), from the table generated from torch 2.14, or of an F.* builtin that
// fxcpp binds (F.avg_pool2d: fx/python_function.h's parameters_of). Throws
// fx::Error for a name it has neither for, or whose signature the table
// cannot hold (*args).
std::vector<Param> python_params(std::string_view qualified_name);
// Binds args/kwargs to `params` as torch.fx binds a call (fast_bind,
// fx/python_function.h), moving them out; throws fx::Error naming `fn` and
// the TypeError that binding raises (too many arguments, an unknown or
// repeated keyword, a missing one). Name it fx::runtime::bind where `fn` is a
// string literal: unqualified, argument-dependent lookup prefers std::bind.
std::vector<c10::IValue> bind(const std::string& fn, const std::vector<Param>& params,
                              std::vector<c10::IValue>& args, IValueKwargs& kwargs);

// ---- values, read as Python would -------------------------------------------
[[noreturn]] void type_error(const std::string& fn, const std::string& what);
bool is_number(const c10::IValue& v);  // int, float or bool (not a tensor)
double to_double(const std::string& fn, const c10::IValue& v);
int64_t to_int(const std::string& fn, const c10::IValue& v);  // int or bool
bool to_bool(const std::string& fn, const c10::IValue& v);
// A torch.dtype (fx::dtype_ivalue); an int is not one, as in Python.
c10::ScalarType to_dtype(const std::string& fn, const c10::IValue& v);
// A `dtype=` argument: None, or a torch.dtype.
inline c10::optional<c10::ScalarType> opt_dtype(const std::string& fn, const c10::IValue& v) {
  if (v.isNone()) return c10::nullopt;
  return to_dtype(fn, v);
}
at::Tensor to_tensor(const std::string& fn, const c10::IValue& v);
c10::optional<at::Tensor> to_opt_tensor(const std::string& fn, const c10::IValue& v);
std::string to_str(const std::string& fn, const c10::IValue& v);
// An int or a sequence of ints; a single int is repeated n times (n > 0).
std::vector<int64_t> to_int_list(const std::string& fn, const c10::IValue& v, size_t n = 0);
// The items of a tuple or list (any kind).
std::vector<c10::IValue> sequence_items(const c10::IValue& v);
bool is_sequence(const c10::IValue& v);  // tuple or list
at::Scalar to_scalar(const std::string& fn, const c10::IValue& v);
// A Python number as a 0-dim "wrapped number" tensor (PyTorch's type promotion
// treats it like a Python scalar).
at::Tensor wrapped_scalar(const c10::IValue& v);
// Python's bool(x) for numbers, None, sequences, strings and 1-element tensors.
bool truth(const std::string& fn, const c10::IValue& v);
// Python's == on non-tensor values (1 == 1.0 == True, tuples item by item).
bool python_equal(const c10::IValue& a, const c10::IValue& b);

}  // namespace fx::runtime
