#pragma once
// The record behind an interned fx::Target: the name and what fxcpp knows
// about it as a Python function.

#include <fx/target.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace fx::detail {

struct TargetEntry {
  std::string name;       // the qualified name, as printed in graph text
  std::string py_module;  // Python's __module__ as FX sees it (`_operator`, `torch`, ...)
  std::string py_name;    // Python's __name__ (`add`, `addmm.default`)
  std::string code_name;  // the name FX's codegen starts from (builtins lose `builtins.`)
  // Node-name candidates in Namespace::normal_form, and whether each is_plain:
  std::string name_hint;  // as a function: snake_case(py_name)
  std::string str_hint;   // as a string target: snake_case, `__x__` -> `x`
  bool name_hint_plain = false, str_hint_plain = false;
  const char* magic_format = nullptr;    // `{} + {}` for operator.add
  const char* inplace_format = nullptr;  // `{} += {}` for operator.iadd
  bool is_builtin = false;               // a member of Python's builtins module
  bool from_torch = false;               // codegen prints the qualified name as is
  std::atomic<bool> side_effects{false};
  std::optional<OpsName> ops;  // set for torch.ops.<ns>.<op>[.<overload>]
  // The dispatcher's operator for `ops`, once found (Target::operator_handle).
  mutable std::mutex handle_mu;
  mutable std::unique_ptr<c10::OperatorHandle> handle;
  // Node::impurity's answer for this target as a call_function and as a
  // call_method, found on first use (impurity.cpp's encoding; 0: not yet).
  mutable std::atomic<uint8_t> function_impurity{0}, method_impurity{0};
};

}  // namespace fx::detail
