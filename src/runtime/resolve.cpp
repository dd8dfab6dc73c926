// Name resolution: a target's Python-qualified name -> an adapter or an ATen
// overload set, once per name.

#include "internal.h"

#include <fx/operator_overloads.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace fx {

std::string Callable::describe() const { return "<callable>"; }
std::shared_ptr<const SpecializedCall> Callable::specialize(const std::vector<SiteArg>&) const {
  return nullptr;
}

namespace {

// key += the decimal digits of v, without a temporary string.
template <class T>
void append_number(std::string& key, T v) {
  char digits[24];
  key.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

// A site's pattern as a key: `T` for a node, a constant's kind and value;
// false for a constant of another kind (a tensor, a list), not remembered.
// Built for every call site of a graph: short keys stay in the string's own
// buffer.
bool pattern_key(const std::vector<SiteArg>& args, std::string& key) {
  for (const auto& a : args) {
    const c10::IValue& c = a.constant;
    if (a.slot >= 0) {
      key += 'T';
    } else if (c.isNone()) {
      key += 'N';
    } else if (c.isBool()) {
      key += c.toBool() ? "b1" : "b0";
    } else if (c.isInt()) {
      key += 'i';
      append_number(key, c.toInt());
    } else if (c.isDouble()) {
      key += 'd';
      append_number(key, std::bit_cast<uint64_t>(c.toDouble()));  // -0.0 and NaNs kept apart
    } else if (c.isString()) {
      const std::string& s = c.toStringRef();
      key += 's';
      append_number(key, s.size());
      key += ':';
      key += s;
    } else {
      return false;
    }
    key += ';';
  }
  return true;
}

// Enough for every pattern a graph has, bounded for graphs whose constants
// all differ (add(x, 0), add(x, 1), ...).
constexpr size_t kMaxRememberedPatterns = 256;

}  // namespace

std::shared_ptr<const SpecializedCall> Callable::specialized(const std::vector<SiteArg>& args) const {
  std::string key;
  if (!pattern_key(args, key)) return specialize(args);
  {
    std::lock_guard lock(specialized_mu_);
    if (auto it = specialized_.find(key); it != specialized_.end()) return it->second;
  }
  auto made = specialize(args);
  std::lock_guard lock(specialized_mu_);
  if (specialized_.size() < kMaxRememberedPatterns) specialized_.emplace(std::move(key), made);
  return made;
}

namespace runtime {

namespace {

class FnCallable final : public Callable {
 public:
  FnCallable(std::string description, Fn fn, Specializer specializer = nullptr)
      : description_(std::move(description)), fn_(std::move(fn)), specializer_(std::move(specializer)) {}
  std::shared_ptr<const SpecializedCall> specialize(const std::vector<SiteArg>& args) const override {
    return specializer_ ? specializer_(args) : nullptr;
  }
  c10::IValue call(std::vector<c10::IValue> args, IValueKwargs kwargs) const override {
    try {
      return fn_(args, kwargs);
    } catch (const Error& e) {
      // an error of an inner call (operator.add -> aten::add) names this target too
      if (std::string_view(e.what()).substr(0, description_.size()) == description_) throw;
      throw Error(description_ + ": " + e.what());
    } catch (const c10::Error& e) {
      throw Error(description_ + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw Error(description_ + ": " + e.what());
    }
  }
  std::string describe() const override { return description_; }

 private:
  std::string description_;
  Fn fn_;
  Specializer specializer_;
};

struct Registry {
  std::mutex mu;
  Adapters adapters;
  std::unordered_map<std::string, std::shared_ptr<const Callable>> functions;  // resolved
  std::unordered_map<std::string, std::shared_ptr<const Callable>> methods;    // resolved

  Registry() {
    register_operator_functions(adapters);
    register_getitem(adapters);
    register_functional(adapters);
    register_tensor_methods(adapters);
    register_builtins(adapters);
    register_torch_functions(adapters);
    register_higher_order(adapters);
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: callables may outlive static destruction order
  return *r;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// torch.* spellings of ATen names: prefix -> aten name prefix.
struct Alias {
  std::string_view python;
  std::string_view aten;
};
constexpr Alias kAliases[] = {
    {"torch.nn.functional.", ""},
    {"torch._C._nn.", ""},
    {"torch._C._VariableFunctions.", ""},
    {"torch._C._linalg.", ""},
    {"torch._C._fft.", ""},
    {"torch._C._special.", ""},
    {"torch.special.", "special_"},
    {"torch.linalg.", "linalg_"},
    {"torch.fft.", "fft_"},
    {"torch.", ""},
};

std::shared_ptr<const Callable> resolve_function_locked(Registry& r, const std::string& name) {
  if (auto it = r.adapters.functions.find(name); it != r.adapters.functions.end()) return it->second;
  if (starts_with(name, "torch.ops.")) {
    const OpsName* parts = Target(name).ops_name();
    if (!parts) throw Error(name + " is not an operator: expected torch.ops.<namespace>.<op>[.<overload>]");
    auto ops = operator_overloads(parts->qualified_op());
    if (!parts->is_packet()) {
      const std::string_view want = parts->dispatcher_overload();
      std::erase_if(ops, [&](const c10::OperatorHandle& h) { return h.schema().overload_name() != want; });
    }
    if (ops.empty())
      throw Error(name + " is not a known operator: no " + parts->qualified_op() +
                  (parts->is_packet() ? "" : " overload '" + parts->overload + "'") +
                  " is registered with the dispatcher");
    return make_aten_callable(name, std::move(ops), false);
  }
  for (const auto& a : kAliases) {
    if (!starts_with(name, a.python)) continue;
    std::string rest = name.substr(a.python.size());
    if (rest.empty() || rest.find('.') != std::string::npos) break;
    std::string aten = "aten::" + std::string(a.aten) + rest;
    auto ops = operator_overloads(aten);
    if (ops.empty())
      throw Error(name + " is not a known function: no ATen operator " + aten + " and no adapter");
    return make_aten_callable(name, std::move(ops), false);
  }
  if (starts_with(name, "torchvision."))
    throw Error(
        name +
        " is not a known function: torchvision's wrapped functions are in fxcpp::torchvision; link it "
        "and call fx::torchvision::register_functions() first (fx/torchvision.h)");
  throw Error(name +
              " is not a known function: no adapter is registered for it and it names no ATen operator");
}

}  // namespace

void Adapters::function(const std::string& name, Fn fn, std::string description) {
  if (description.empty()) description = name;
  functions[name] = std::make_shared<FnCallable>(std::move(description), std::move(fn));
}
void Adapters::function(const std::string& name, Fn fn, Specializer specializer) {
  functions[name] = std::make_shared<FnCallable>(name, std::move(fn), std::move(specializer));
}
void Adapters::method(const std::string& name, Fn fn, std::string description) {
  methods[name] = std::make_shared<FnCallable>(
      description.empty() ? "Tensor." + name : std::move(description), std::move(fn));
}

c10::IValue call_aten(const std::string& name, std::vector<c10::IValue> args, IValueKwargs kwargs) {
  return resolve_function("torch.ops.aten." + name)->call(std::move(args), std::move(kwargs));
}

}  // namespace runtime

std::shared_ptr<const Callable> resolve_function(const Target& target) {
  runtime::Registry& r = runtime::registry();
  const std::string& name = target.str();
  std::lock_guard lock(r.mu);
  if (auto it = r.functions.find(name); it != r.functions.end()) return it->second;
  auto c = runtime::resolve_function_locked(r, name);
  r.functions.emplace(name, c);
  return c;
}

std::shared_ptr<const Callable> resolve_method(std::string_view method) {
  runtime::Registry& r = runtime::registry();
  std::string name(method);
  std::lock_guard lock(r.mu);
  if (auto it = r.methods.find(name); it != r.methods.end()) return it->second;
  std::shared_ptr<const Callable> c;
  if (auto it = r.adapters.methods.find(name); it != r.adapters.methods.end()) {
    c = it->second;
  } else {
    auto ops = operator_overloads("aten::" + name);
    std::erase_if(ops, [](const c10::OperatorHandle& h) {
      const auto& a = h.schema().arguments();
      return a.empty() || a[0].name() != "self" || a[0].type()->kind() != c10::TypeKind::TensorType;
    });
    if (ops.empty())
      throw Error("Tensor." + name + " is not a known method: no ATen operator aten::" + name +
                  " takes a Tensor self, and no adapter");
    c = runtime::make_aten_callable("Tensor." + name, std::move(ops), true);
  }
  r.methods.emplace(name, c);
  return c;
}

void register_function(const Target& target, std::shared_ptr<const Callable> fn) {
  if (!fn) throw Error("register_function(" + target.str() + "): null callable");
  runtime::Registry& r = runtime::registry();
  std::lock_guard lock(r.mu);
  r.functions[target.str()] = std::move(fn);
}

std::shared_ptr<const Callable> make_callable(
    std::string description, std::function<c10::IValue(std::vector<c10::IValue>&, IValueKwargs&)> fn) {
  return std::make_shared<runtime::FnCallable>(std::move(description), std::move(fn));
}

}  // namespace fx
