#pragma once
// Shared pieces of the runtime: the adapter registry and ATen calls by name.
// Binding arguments to a Python signature and reading their values is
// public (fx/runtime_args.h): functions registered from outside use it too.

#include <fx/runtime.h>
#include <fx/runtime_args.h>

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
void register_higher_order(Adapters& a);        // higher_order.cpp

// ---- ATen ------------------------------------------------------------------
// A callable choosing among `ops` per call (aten_callable.cpp). `display` names
// the target in messages.
std::shared_ptr<const Callable> make_aten_callable(std::string display, std::vector<c10::OperatorHandle> ops,
                                                   bool method);
// Calls aten::<name> through a cached overload-resolving callable.
c10::IValue call_aten(const std::string& name, std::vector<c10::IValue> args, IValueKwargs kwargs = {});

}  // namespace fx::runtime
