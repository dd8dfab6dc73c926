#pragma once
// fx::wrap: a C++ function recorded as one call_function node.
//
// torch.fx.wrap("fn") makes the tracer record calls to `fn` instead of
// tracing through them: the way to keep data-dependent code (or anything the
// tracer should not look into) out of the graph. In fxcpp:
//
//   const fx::Wrapped scaled_sum = fx::wrap("models.scaled_sum",
//       [](const std::vector<fx::Value>& a, const fx::ValueKwargs&) { return (a[0] + a[1]) * 2; });
//   ...
//   fx::Value y = scaled_sum(x, w);  // traced: call_function[target=models.scaled_sum]
//
// Called on concrete values it simply runs. The name is the function's
// Python-qualified name: the node is named after its last part, and the
// generated code calls it through a `wrap("models_scaled_sum")` global, as
// torch.fx does. The function is also registered with the runtime under
// that name, so GraphModules that call it run it.

#include <fx/value.h>

#include <functional>
#include <vector>

namespace fx {

using WrappedFunction = std::function<Value(const std::vector<Value>&, const ValueKwargs&)>;

class Wrapped {
 public:
  Wrapped(Target name, WrappedFunction fn) : name_(name), fn_(std::move(fn)) {}
  const Target& target() const { return name_; }

  // A node (marked meta["is_wrapped"]) when an argument is symbolic, the
  // function's result otherwise.
  Value call(std::vector<Value> args, ValueKwargs kwargs = {}) const;
  template <class... A>
  Value operator()(A&&... a) const {
    std::vector<Value> args;
    ValueKwargs kwargs;
    detail::pack_into(args, kwargs, std::forward<A>(a)...);
    return call(std::move(args), std::move(kwargs));
  }

 private:
  Target name_;
  WrappedFunction fn_;
};

// Wraps `fn` under `qualified_name` and registers it with the runtime.
// Throws fx::Error for an empty name or a null function.
Wrapped wrap(const Target& qualified_name, WrappedFunction fn);

}  // namespace fx
