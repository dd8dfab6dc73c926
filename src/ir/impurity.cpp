// Node::impurity: the one purity rule (fx/impurity.h). What a call_function
// or call_method target is depends on its name alone (but for the dropouts,
// whose training argument decides), so the answer is kept on the interned
// target and each name is looked at once per process.
#include <fx/graph.h>
#include <fx/impurity.h>
#include <fx/node.h>
#include <fx/operator_overloads.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <string_view>

#include "target_entry.h"

namespace fx {

namespace {

bool ends_with_underscore(std::string_view s) {
  return !s.empty() && s.back() == '_' && !s.starts_with("__");
}

// operator.* functions that write their first argument.
constexpr std::string_view kOperatorInPlace[] = {
    "iadd", "iand", "iconcat", "ifloordiv", "ilshift",  "imod", "imul",    "imatmul",
    "ior",  "ipow", "irshift", "isub",      "itruediv", "ixor", "setitem", "delitem"};
// Tensor methods that write `self` without a trailing underscore.
constexpr std::string_view kMethodInPlace[] = {"__iadd__", "__iand__",    "__ifloordiv__", "__ilshift__",
                                               "__imod__", "__imul__",    "__imatmul__",   "__ior__",
                                               "__ipow__", "__irshift__", "__isub__",      "__itruediv__",
                                               "__ixor__", "__setitem__", "__delitem__"};
// Called for their effect, not their value (Python functions, not ATen ops).
constexpr std::string_view kReturnsNone[] = {"builtins.print", "torch.autograd.backward",
                                             "torch.cuda.synchronize", "torch.set_grad_enabled"};
constexpr std::string_view kMethodsReturnsNone[] = {"backward", "retain_grad", "record_stream"};
// Functions that move the global RNG without an ATen op of their name.
constexpr std::string_view kRandomFunctions[] = {
    "torch.manual_seed", "torch.seed", "torch.nn.functional.gumbel_softmax", "torch.nn.functional.rrelu"};

template <size_t N>
bool in(const std::string_view (&table)[N], std::string_view s) {
  for (auto t : table)
    if (t == s) return true;
  return false;
}

// What the ATen overloads of `aten::<op>` say together: random when one is
// tagged nondeterministic_seeded, returns_none when none returns anything.
// (Each target asks once: Node::impurity caches the answer on it.)
Impurity aten_name_impurity(std::string_view op) {
  bool any = false, seeded = false, returns_none = true;
  for (const c10::OperatorHandle& h : operator_overloads("aten::" + std::string(op))) {
    if (!h.hasSchema()) continue;
    any = true;
    seeded = seeded || h.hasTag(at::Tag::nondeterministic_seeded);
    returns_none = returns_none && h.schema().returns().empty();
  }
  if (!any) return Impurity::none;
  if (seeded) return Impurity::random;
  if (returns_none) return Impurity::returns_none;
  return Impurity::none;
}

// torch.ops.<ns>.<op>[.<overload>]: the schema says it all (a packet:
// its default overload's, as torch.fx asks).
Impurity ops_impurity(const Target& t) {
  const OpsName* ops = t.ops_name();
  if (!ops) return Impurity::none;
  const c10::OperatorHandle* handle = t.operator_handle();
  if (!handle) return ends_with_underscore(ops->op) ? Impurity::in_place : Impurity::none;
  const c10::FunctionSchema& s = handle->schema();
  if (s.is_mutable()) return Impurity::in_place;
  if (handle->hasTag(at::Tag::nondeterministic_seeded)) return Impurity::random;
  if (s.returns().empty()) return Impurity::returns_none;
  return Impurity::none;
}

// The argument at `index` or keyword `key`, or nullptr when not given.
const Argument* argument(const Node& n, size_t index, std::string_view key) {
  if (index < n.args().size()) return &n.args()[index];
  return n.kwarg(key);
}

bool is_false(const Argument* a) { return a && a->is<bool>() && !a->get<bool>(); }
bool is_true(const Argument* a) { return a && a->is<bool>() && a->get<bool>(); }

bool is_functional_dropout(std::string_view module, std::string_view name) {
  return module == "torch.nn.functional" &&
         (name == "dropout" || name == "dropout1d" || name == "dropout2d" || name == "dropout3d" ||
          name == "alpha_dropout" || name == "feature_alpha_dropout");
}
bool is_torch_dropout(std::string_view module, std::string_view name) {
  return module == "torch" && (name == "dropout" || name == "alpha_dropout" || name == "feature_dropout" ||
                               name == "feature_alpha_dropout");
}

// F.dropout & co. are random unless their training argument is a literal False.
Impurity dropout_impurity(const Node& n) {
  // F.dropout(input, p=0.5, training=True, inplace=False); torch.dropout(input, p, train)
  const bool functional = is_functional_dropout(n.target().python_module(), n.target().python_name());
  const Impurity i =
      is_false(argument(n, 2, functional ? "training" : "train")) ? Impurity::none : Impurity::random;
  if (i != Impurity::none && is_true(n.kwarg("inplace"))) return Impurity::in_place;
  return i;
}

// What calling `t` is, whatever its arguments; nullopt for the dropouts,
// whose training argument decides (dropout_impurity).
std::optional<Impurity> function_impurity(const Target& t) {
  std::string_view name = t.str();
  if (name.starts_with("torch.ops.")) return ops_impurity(t);
  std::string_view module = t.python_module(), fn = t.python_name();
  if (module == "_operator" || module == "operator")
    return in(kOperatorInPlace, fn) ? Impurity::in_place : Impurity::none;
  if (is_functional_dropout(module, fn) || is_torch_dropout(module, fn)) return std::nullopt;
  if (ends_with_underscore(fn)) return Impurity::in_place;  // torch.relu_, F.relu_, torch.nn.init.normal_
  if (in(kReturnsNone, name)) return Impurity::returns_none;
  if (in(kRandomFunctions, name)) return Impurity::random;
  if (module == "torch" || module == "torch.nn.functional" || module == "torch._C._nn" ||
      module == "torch._C._VariableFunctions")
    return aten_name_impurity(fn);  // torch.rand, torch.normal, torch.multinomial, ...
  return Impurity::none;
}

Impurity method_impurity(const Target& t) {
  std::string_view name = t.str();
  if (ends_with_underscore(name) || in(kMethodInPlace, name)) return Impurity::in_place;
  if (in(kMethodsReturnsNone, name)) return Impurity::returns_none;
  return aten_name_impurity(name);  // x.bernoulli(), x.multinomial(3)
}

// The cache's encoding: 0 not yet known, 1 the arguments decide, 2 + Impurity.
constexpr uint8_t kUnknown = 0, kArgumentsDecide = 1, kKnown = 2;

template <class Compute>
std::optional<Impurity> cached(std::atomic<uint8_t>& slot, Compute compute) {
  uint8_t v = slot.load(std::memory_order_relaxed);
  if (v == kUnknown) {
    // Two threads may both compute it; they store the same answer.
    std::optional<Impurity> i = compute();
    v = i ? static_cast<uint8_t>(kKnown + static_cast<uint8_t>(*i)) : kArgumentsDecide;
    slot.store(v, std::memory_order_relaxed);
  }
  if (v == kArgumentsDecide) return std::nullopt;
  return static_cast<Impurity>(v - kKnown);
}

}  // namespace

Impurity Node::impurity() const {
  Impurity i = Impurity::none;
  switch (op_) {
    case Op::placeholder:
    case Op::output:
      return Impurity::side_effect;
    case Op::call_function: {
      if (b_->target.has_side_effects()) return Impurity::side_effect;
      std::optional<Impurity> known =
          cached(b_->target.entry()->function_impurity, [&] { return function_impurity(b_->target); });
      i = known ? *known : dropout_impurity(*this);
      break;
    }
    case Op::call_method:
      i = *cached(b_->target.entry()->method_impurity,
                  [&] { return std::optional<Impurity>(method_impurity(b_->target)); });
      break;
    case Op::call_module:
      return b_->graph->owning_module() ? b_->graph->owning_module()->module_impurity(b_->target)
                                        : Impurity::none;
    case Op::get_attr:
      return Impurity::none;
  }
  if (i != Impurity::none) return i;
  // A function told to write its input or an `out=` tensor mutates it.
  if (is_true(kwarg("inplace"))) return Impurity::in_place;
  if (const Argument* out = kwarg("out"); out && !out->is_none()) return Impurity::in_place;
  return Impurity::none;
}

void for_each_written_input(const Node& n, const std::function<void(Node*)>& fn) {
  if (!n.args().empty()) for_each_node(n.args()[0], fn);
  if (const Argument* out = n.kwarg("out")) for_each_node(*out, fn);
}

std::string_view impurity_name(Impurity i) {
  switch (i) {
    case Impurity::none:
      return "none";
    case Impurity::side_effect:
      return "side_effect";
    case Impurity::in_place:
      return "in_place";
    case Impurity::random:
      return "random";
    case Impurity::returns_none:
      return "returns_none";
  }
  return "?";
}

}  // namespace fx
