#pragma once
// fx::Target: what a node calls or names, interned.
//
// For call_function, a target is the Python-qualified name of the function:
// `operator.add`, `torch.relu`, `torch.nn.functional.gelu`, `math.sqrt`,
// `builtins.getattr`, `torch.ops.aten.addmm.default`. For call_method it is
// the method name, for call_module/get_attr a dotted path, for placeholder
// the argument name and for output the word `output`.
//
// Targets are interned: copying and comparing them is a pointer operation,
// and the registry behind them knows how each function prints in Python
// (`x + y` for operator.add, `x.shape` for builtins.getattr) and whether it
// has side effects.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace c10 {
class OperatorHandle;
}

namespace fx {

// The parts of a `torch.ops.<namespace>.<op>[.<overload>]` target, taken
// apart once, when the target is interned: `torch.ops.aten.add.Tensor` is
// aten, add, Tensor; the packet `torch.ops.aten.add` has no overload.
struct OpsName {
  std::string ns;        // `aten`
  std::string op;        // `add`
  std::string overload;  // `Tensor`, `default`, or empty for a packet
  bool is_packet() const { return overload.empty(); }
  // The dispatcher's name of the operator (`aten::add`) and of the overload
  // (`default` is "").
  std::string qualified_op() const { return ns + "::" + op; }
  std::string_view dispatcher_overload() const {
    return overload == "default" ? std::string_view() : std::string_view(overload);
  }
};

namespace detail {
struct TargetEntry;
}

class Target {
 public:
  Target();  // the empty target
  Target(std::string_view name);
  Target(const char* name) : Target(std::string_view(name)) {}
  Target(const std::string& name) : Target(std::string_view(name)) {}
  // The target behind `entry`, another Target's entry(): no lookup.
  explicit Target(const detail::TargetEntry* entry) : e_(entry) {}

  const std::string& str() const;
  operator std::string_view() const { return str(); }

  // How Python sees this target as a function: `operator.add` is
  // `_operator`.`add`, `torch.ops.aten.addmm.default` is
  // `torch.ops.aten`.`addmm.default`, `builtins.len` is `builtins`.`len`.
  std::string_view python_module() const;
  std::string_view python_name() const;

  // True for torch.fx's side-effectful functions (torch._assert, the
  // profiler's record_function ops, ...) and any target passed to
  // register_side_effect: Node::impurity calls them side_effect.
  bool has_side_effects() const;

  // For a torch.ops target, its parts; nullptr for any other target.
  const OpsName* ops_name() const;
  // For a torch.ops target, the dispatcher's operator: the overload it
  // names, or a packet's default overload. Found once and kept; nullptr
  // while the dispatcher has no such operator (a custom op may be
  // registered later) and for other targets.
  const c10::OperatorHandle* operator_handle() const;

  const detail::TargetEntry* entry() const { return e_; }

  bool operator==(const Target& o) const { return e_ == o.e_; }
  bool operator==(std::string_view s) const { return str() == s; }
  bool operator==(const char* s) const { return str() == s; }

 private:
  const detail::TargetEntry* e_;
};

// Marks a call_function target as side-effecting (torch.fx's
// @has_side_effect), so that no pass removes, merges or folds calls to it.
void register_side_effect(Target t);

}  // namespace fx

template <>
struct std::hash<fx::Target> {
  size_t operator()(const fx::Target& t) const noexcept { return std::hash<const void*>()(t.entry()); }
};
