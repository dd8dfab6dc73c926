#pragma once
// fx runtime: makes graph targets executable on LibTorch.
//
// A GraphModule / Interpreter resolves each call_function target with
// resolve_function() and each call_method target with resolve_method() once,
// then calls the returned Callable for every execution with the node's
// arguments converted to c10::IValue (to_ivalue, with node values
// substituted). See docs/runtime.md.
//
//   auto relu = fx::resolve_function("torch.relu");
//   c10::IValue y = relu->call({x}, {});
//
// Every error (unknown name, arguments that fit no overload, an error raised
// inside ATen) is an fx::Error naming the target; nothing aborts.

#include <fx/argument.h>
#include <fx/error.h>
#include <fx/target.h>

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fx {

class Node;

// ---- values ---------------------------------------------------------------

// Converts a constant argument to the value the runtime passes around:
//   None -> None, bool -> bool, int -> int, float -> double, str -> str,
//   tuple -> tuple, list -> int list / double list / bool list / tensor list
//   when all items are of that kind (an empty list is an int list), otherwise
//   a generic list, dict -> generic dict with str keys,
//   torch.dtype -> a dtype value (dtype_ivalue), torch.layout /
//   torch.memory_format -> int (TorchScript's encoding: the enum's value),
//   torch.device -> Device,
//   slice -> a slice value (slice_ivalue), Ellipsis -> ellipsis_ivalue(),
//   Opaque -> its IValue when it was made by make_opaque.
// Throws fx::Error for a node (the caller substitutes values: use the
// overload below) and for an Opaque not made by make_opaque.
c10::IValue to_ivalue(const Argument& a);
// The same, with every node n inside `a` replaced by node_value(n).
c10::IValue to_ivalue(const Argument& a, const std::function<c10::IValue(const Node*)>& node_value);

// A Python list as LibTorch expects it: int[], float[], bool[] or Tensor[]
// when every item is one (the empty list is an int list, as TorchScript's
// default), a generic list otherwise.
c10::IValue list_ivalue(std::vector<c10::IValue> items);

// Python's slice(start, stop, step) and Ellipsis as IValues. They are
// capsules only operator.getitem (and the helpers below) understand; each part
// of a slice is None or an int (or a 0-dim integer tensor).
c10::IValue slice_ivalue(c10::IValue start, c10::IValue stop, c10::IValue step);
c10::IValue ellipsis_ivalue();
bool is_slice(const c10::IValue& v);
bool is_ellipsis(const c10::IValue& v);
// The three parts of a slice value; throws fx::Error when `v` is not one.
std::vector<c10::IValue> slice_parts(const c10::IValue& v);

// torch.dtype as an IValue: a capsule, one per ScalarType and always the
// same one, so that == and `is` behave as in Python. ATen's own encoding of a
// ScalarType is an int; the runtime converts where an overload takes a
// ScalarType, and only there, so `x.view(torch.float16)` picks view.dtype
// while `x.view(6)` stays view(int[] size).
c10::IValue dtype_ivalue(c10::ScalarType t);
// The dtype `v` holds; nullopt when it is not a dtype value.
std::optional<c10::ScalarType> dtype_of(const c10::IValue& v);

// An Opaque argument carrying `value` (e.g. a tensor constant), which
// to_ivalue turns back into `value`.
Opaque make_opaque(c10::IValue value, std::string repr);

// Python's name for the type of a runtime value: "Tensor", "int", "float",
// "bool", "str", "NoneType", "tuple", "list", "dict", "device", "dtype",
// "slice"...
std::string python_type_name(const c10::IValue& v);

// ---- callables -------------------------------------------------------------

using IValueKwargs = std::vector<std::pair<std::string, c10::IValue>>;

// One positional argument of a call site, as known before running: a node's
// value (expected to be a tensor; `slot` >= 0 is where the executor keeps
// it), or a constant.
struct SiteArg {
  int slot = -1;  // >= 0: a node's value
  c10::IValue constant;
};

// A call prepared by Callable::specialize for a pattern of positional
// arguments (which ones are node values, and the constants): the overload is
// chosen and the constants are converted once, so that a run only reads the
// node values and calls the kernel (unboxed). It does not depend on where
// the node values are kept, so the sites of one pattern share it.
// Thread-safe.
class SpecializedCall {
 public:
  virtual ~SpecializedCall() = default;
  // Runs the call and stores its result in `result`; the value of the site's
  // i-th argument, when it is a node, is slots[site_slots[i]]. Returns false,
  // having run nothing, when a node value is not a tensor: the caller then
  // makes the general call(). Errors as call()'s.
  virtual bool try_call(const c10::IValue* slots, const int* site_slots, c10::IValue& result) const = 0;
};

// Something a call_function or call_method node runs. Thread-safe: call()
// may run concurrently from several threads.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual c10::IValue call(std::vector<c10::IValue> args, IValueKwargs kwargs) const = 0;
  // For messages: the target and what it runs (the ATen schemas or the adapter).
  virtual std::string describe() const;
  // A faster call for a site with these positional arguments and no keyword
  // arguments, valid while every node argument is a tensor; nullptr when
  // this callable has none for them (the site then always uses call()).
  // Whatever it returns computes exactly what call() computes.
  virtual std::shared_ptr<const SpecializedCall> specialize(const std::vector<SiteArg>& args) const;
  // specialize(), remembered per pattern when the constants are numbers,
  // booleans, strings or None: a graph's many sites of one pattern (every
  // `add(x, 1)`) choose the overload once. Thread-safe.
  std::shared_ptr<const SpecializedCall> specialized(const std::vector<SiteArg>& args) const;

 private:
  mutable std::mutex specialized_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const SpecializedCall>> specialized_;
};

// Resolves a call_function target (`torch.relu`, `operator.add`,
// `torch.nn.functional.gelu`, `torch.ops.aten.addmm.default`,
// `builtins.getattr`, `math.sqrt`, ...). Results are cached per name.
// Throws fx::Error naming the target when nothing by that name exists.
std::shared_ptr<const Callable> resolve_function(const Target& target);
// Resolves a call_method target (a Tensor method name: `view`, `size`,
// `clamp`, ...); the callable takes self as its first argument.
std::shared_ptr<const Callable> resolve_method(std::string_view method);

// Registers (or replaces) a call_function target, e.g. for a user function a
// graph calls. Later resolve_function calls return `fn`.
void register_function(const Target& target, std::shared_ptr<const Callable> fn);

// A Callable from a plain function (for register_function and adapters).
std::shared_ptr<const Callable> make_callable(
    std::string description, std::function<c10::IValue(std::vector<c10::IValue>&, IValueKwargs&)> fn);

}  // namespace fx
