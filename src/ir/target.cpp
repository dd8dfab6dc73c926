#include <fx/target.h>

#include <memory>
#include <mutex>
#include <string_view>

#include "flat_map.h"
#include "namespace.h"
#include "ops_name.h"
#include "python_names.h"
#include "target_entry.h"

namespace fx {

namespace {

using detail::TargetEntry;

struct Format {
  std::string_view name;
  const char* format;
};

// torch.fx.graph.magic_methods (reflectable ones included) and inplace_methods.
constexpr Format kMagic[] = {
    {"add", "{} + {}"},     {"sub", "{} - {}"},     {"mul", "{} * {}"},    {"floordiv", "{} // {}"},
    {"truediv", "{} / {}"}, {"div", "{} / {}"},     {"mod", "{} % {}"},    {"pow", "{} ** {}"},
    {"lshift", "{} << {}"}, {"rshift", "{} >> {}"}, {"and_", "{} & {}"},   {"or_", "{} | {}"},
    {"xor", "{} ^ {}"},     {"getitem", "{}[{}]"},  {"matmul", "{} @ {}"}, {"eq", "{} == {}"},
    {"ne", "{} != {}"},     {"lt", "{} < {}"},      {"gt", "{} > {}"},     {"le", "{} <= {}"},
    {"ge", "{} >= {}"},     {"pos", "+{}"},         {"neg", "-{}"},        {"invert", "~{}"}};
constexpr Format kInplace[] = {
    {"iadd", "{} += {}"},  {"iand", "{} &= {}"},      {"ifloordiv", "{} //= {}"}, {"ilshift", "{} <<= {}"},
    {"imod", "{} %= {}"},  {"imul", "{} *= {}"},      {"imatmul", "{} @= {}"},    {"ior", "{} |= {}"},
    {"ipow", "{} **= {}"}, {"irshift", "{} >>= {}"},  {"isub", "{} -= {}"},       {"itruediv", "{} /= {}"},
    {"ixor", "{} ^= {}"},  {"setitem", "{}[{}] = {}"}};

// torch.fx 2.14's torch.fx.node._side_effectful_functions, by qualified name
// (operator.setitem, also in it, is in_place: fx/impurity.h).
constexpr std::string_view kSideEffects[] = {"torch._assert",
                                             "torch._assert_async",
                                             "torch._C._set_grad_enabled",
                                             "torch.amp.autocast_mode._enter_autocast",
                                             "torch.amp.autocast_mode._exit_autocast",
                                             "torch._functorch.predispatch._enter_dual_level",
                                             "torch._functorch.predispatch._exit_dual_level",
                                             "torch._functorch.predispatch._jvp_increment_nesting",
                                             "torch._functorch.predispatch._jvp_decrement_nesting",
                                             "torch.ops.aten._assert_async.msg",
                                             "torch.ops.aten._assert_scalar.default",
                                             "torch.ops.aten._assert_tensor_metadata.default",
                                             "torch.ops.aten.sym_constrain_range.default",
                                             "torch.ops.aten.sym_constrain_range_for_size.default",
                                             "torch.ops.higher_order.call_torchbind",
                                             "torch.ops.inductor.accumulate_grad_.default",
                                             "torch.ops.inductor.resize_storage_bytes_.default",
                                             "torch.ops.prims._sink_tokens.default",
                                             "torch.ops.profiler._record_function_enter",
                                             "torch.ops.profiler._record_function_enter.default",
                                             "torch.ops.profiler._record_function_enter_new",
                                             "torch.ops.profiler._record_function_enter_new.default",
                                             "torch.ops.profiler._record_function_exit",
                                             "torch.ops.profiler._record_function_exit._RecordFunction"};

template <size_t N>
const char* find_format(const Format (&table)[N], std::string_view name) {
  for (const auto& f : table)
    if (f.name == name) return f.format;
  return nullptr;
}

void describe(TargetEntry& e) {
  std::string_view name = e.name;
  if ((e.ops = detail::parse_ops_name(name))) {
    // torch.ops.<namespace>.<op>[.<overload>]: Python's __name__ is `op.overload`.
    const size_t ns_end = name.find('.', 10);
    e.py_module = std::string(name.substr(0, ns_end));
    e.py_name = std::string(name.substr(ns_end + 1));
  }
  if (e.py_name.empty()) {
    size_t dot = name.rfind('.');
    e.py_module = dot == std::string_view::npos ? "" : std::string(name.substr(0, dot));
    e.py_name = std::string(dot == std::string_view::npos ? name : name.substr(dot + 1));
  }
  if (e.py_module == "operator") {
    e.py_module = "_operator";
    e.magic_format = find_format(kMagic, e.py_name);
    e.inplace_format = find_format(kInplace, e.py_name);
  }
  e.is_builtin = e.py_module == "builtins";
  // FX's codegen names a global from the function's real module: `_operator.not_`.
  e.code_name = e.is_builtin ? e.py_name : e.py_module == "_operator" ? "_operator." + e.py_name : e.name;
  e.from_torch = e.py_module == "torch" || e.py_module.starts_with("torch.");
  e.name_hint = detail::Namespace::normal_form(detail::snake_case(e.py_name));
  e.name_hint_plain = detail::Namespace::is_plain(e.name_hint);
  bool magic = name.size() > 4 && name.starts_with("__") && name.ends_with("__");
  e.str_hint =
      detail::Namespace::normal_form(detail::snake_case(magic ? name.substr(2, name.size() - 4) : name));
  e.str_hint_plain = detail::Namespace::is_plain(e.str_hint);
  for (auto s : kSideEffects)
    if (s == name) e.side_effects = true;
}

class Registry {
 public:
  const TargetEntry* intern(std::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto* known = entries_.find(name)) return known->get();
    auto e = std::make_unique<TargetEntry>();
    e->name = std::string(name);
    describe(*e);
    const TargetEntry* raw = e.get();
    *entries_.try_emplace(std::string_view(raw->name)).first = std::move(e);  // keyed by the entry's own name
    return raw;
  }

 private:
  std::mutex mu_;
  detail::FlatMap<std::string_view, std::unique_ptr<TargetEntry>, detail::StringViewHash> entries_;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: targets outlive static graphs
  return *r;
}

const TargetEntry* empty_entry() {
  static const TargetEntry* e = registry().intern("");
  return e;
}

}  // namespace

Target::Target() : e_(empty_entry()) {}
Target::Target(std::string_view name) : e_(registry().intern(name)) {}

const std::string& Target::str() const { return e_->name; }
std::string_view Target::python_module() const { return e_->py_module; }
std::string_view Target::python_name() const { return e_->py_name; }
const OpsName* Target::ops_name() const { return e_->ops ? &*e_->ops : nullptr; }

const c10::OperatorHandle* Target::operator_handle() const {
  if (!e_->ops) return nullptr;
  std::lock_guard<std::mutex> lock(e_->handle_mu);
  if (!e_->handle)
    if (auto h = c10::Dispatcher::singleton().findSchema(
            {e_->ops->qualified_op(), std::string(e_->ops->dispatcher_overload())}))
      e_->handle = std::make_unique<c10::OperatorHandle>(*h);
  return e_->handle.get();
}

bool Target::has_side_effects() const { return e_->side_effects.load(std::memory_order_relaxed); }

void register_side_effect(Target t) {
  const_cast<TargetEntry*>(t.entry())->side_effects.store(true, std::memory_order_relaxed);
}

}  // namespace fx
