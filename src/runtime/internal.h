#pragma once
// Shared pieces of the runtime: the adapter registry, Python-signature
// binding for adapters, ATen calls by name, and value helpers.

#include <fx/runtime.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fx::runtime {

using Fn = std::function<c10::IValue(std::vector<c10::IValue>&, IValueKwargs&)>;
// An adapter's Callable::specialize (nullptr: none).
using Specializer = std::function<std::shared_ptr<const SpecializedCall>(const std::vector<SiteArg>&)>;

// ---- the adapter tables ----------------------------------------------------
// Filled once, at first resolution, by the register_* functions below.
struct Adapters {
  std::map<std::string, std::shared_ptr<const Callable>, std::less<>> functions;  // by target name
  std::map<std::string, std::shared_ptr<const Callable>, std::less<>> methods;    // by method name
  void function(const std::string& name, Fn fn, std::string description = {});
  void function(const std::string& name, Fn fn, Specializer specializer);
  void method(const std::string& name, Fn fn, std::string description = {});
};
void register_operator_functions(Adapters& a);  // operators.cpp
void register_getitem(Adapters& a);             // getitem.cpp
void register_functional(Adapters& a);          // functional.cpp
void register_tensor_methods(Adapters& a);      // tensor_methods.cpp
void register_builtins(Adapters& a);            // builtins.cpp
void register_torch_functions(Adapters& a);     // torch_functions.cpp
void register_torchvision_ops(Adapters& a);     // torchvision_ops.cpp
void register_torchvision_swin(Adapters& a);    // torchvision_swin.cpp
void register_higher_order(Adapters& a);        // higher_order.cpp

// ---- ATen ------------------------------------------------------------------
// All dispatcher overloads of `qualified` ("aten::add"); empty when none.
std::vector<c10::OperatorHandle> aten_overloads(const std::string& qualified);
// A callable choosing among `ops` per call (aten_callable.cpp). `display` names
// the target in messages.
std::shared_ptr<const Callable> make_aten_callable(std::string display, std::vector<c10::OperatorHandle> ops,
                                                   bool method);
// Calls aten::<name> through a cached overload-resolving callable.
c10::IValue call_aten(const std::string& name, std::vector<c10::IValue> args, IValueKwargs kwargs = {});

// ---- Python-style signatures for adapters --------------------------------
struct Param {
  std::string name;
  std::optional<c10::IValue> default_value;  // nullopt: required
  bool kwonly = false;
};
inline Param req(std::string n) { return Param{std::move(n), std::nullopt, false}; }
inline Param opt(std::string n, c10::IValue d) { return Param{std::move(n), std::move(d), false}; }
inline Param kwo(std::string n, c10::IValue d) { return Param{std::move(n), std::move(d), true}; }
// Binds args/kwargs to `params` as Python does; throws fx::Error naming
// `fn` for too many arguments, unknown/duplicate keywords, missing ones.
std::vector<c10::IValue> bind(const std::string& fn, const std::vector<Param>& params,
                              std::vector<c10::IValue>& args, IValueKwargs& kwargs);

// ---- value helpers ----------------------------------------------------------
[[noreturn]] void type_error(const std::string& fn, const std::string& what);
bool is_number(const c10::IValue& v);  // int, float or bool (not a tensor)
double to_double(const std::string& fn, const c10::IValue& v);
int64_t to_int(const std::string& fn, const c10::IValue& v);  // int or bool
bool to_bool(const std::string& fn, const c10::IValue& v);
// A `dtype=` argument: None, or a dtype (an int at run time).
inline c10::optional<c10::ScalarType> opt_dtype(const std::string& fn, const c10::IValue& v) {
  if (v.isNone()) return c10::nullopt;
  return static_cast<c10::ScalarType>(to_int(fn, v));
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
