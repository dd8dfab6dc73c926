// normalize_function / normalize_module: torch/fx/operator_schemas.py (torch.fx 2.14).
#include <fx/graph_module.h>
#include <fx/node.h>
#include <fx/passes/operator_schemas.h>
#include <fx/python_function.h>

#include <torch/csrc/jit/runtime/operator.h>

#include "../ir/python_names.h"

#include <cctype>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fx::passes {

namespace {

// ---- Python types, as far as FX's type_matches looks at them ----------------

struct PyType {
  enum class Kind { cls, list, tuple, union_, other };
  Kind kind = Kind::other;
  std::string name;          // cls: the class (`int`, `torch.Tensor`, `numbers.Number`); other: what it is
  std::vector<PyType> args;  // list: {element}; tuple: items (`...` as class `ellipsis`); union_: members
  bool operator==(const PyType&) const = default;
};
PyType cls(std::string name) { return {PyType::Kind::cls, std::move(name), {}}; }
PyType other(std::string what) { return {PyType::Kind::other, std::move(what), {}}; }

// issubclass(a, b) among the classes that occur here.
bool is_subclass(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (b == "int") return a == "bool";
  if (b == "numbers.Number") return a == "bool" || a == "int" || a == "float" || a == "complex";
  return false;
}

bool is_class(const PyType& t) { return t.kind == PyType::Kind::cls; }

// torch.fx.operator_schemas.type_matches.
bool type_matches(const PyType& sig, const PyType& arg) {
  if (sig == arg) return true;
  if (sig.kind == PyType::Kind::union_) {
    for (const PyType& c : sig.args)
      if (type_matches(c, arg)) return true;
    return false;
  }
  if (sig.kind == PyType::Kind::list) {
    const PyType& el = sig.args[0];
    if (el.name == "int" && is_class(el) && arg == cls("int")) return true;  // int promotes to List[int]
    if (!is_class(el)) return false;  // FX: "Does not support nested parametric types"
    if (arg.kind == PyType::Kind::list)
      return is_class(arg.args[0]) && is_subclass(arg.args[0].name, el.name);
    if (arg.kind != PyType::Kind::tuple) return false;
    for (const PyType& c : arg.args)  // Tuple[T, ...] is accepted for List[T]
      if (!(c == cls("ellipsis") || (is_class(c) && is_subclass(c.name, el.name)))) return false;
    return true;
  }
  if (sig == cls("int") && arg == cls("torch.dtype")) return true;  // dtype is an int in schemas
  if (sig == cls("numbers.Number") && (arg == cls("int") || arg == cls("float"))) return true;
  if (is_class(sig) && is_class(arg)) return is_subclass(arg.name, sig.name);
  return false;
}

// eval(annotation_str) with FX's _type_eval_globals: TorchScript's
// annotation of a schema argument as the Python type FX compares.
class AnnotationParser {
 public:
  explicit AnnotationParser(const std::string& s) : s_(s) {}
  PyType parse() {
    PyType t = type();
    if (pos_ != s_.size()) fail("unexpected '" + s_.substr(pos_) + "'");
    return t;
  }

 private:
  PyType type() {
    skip_spaces();
    if (peek('(')) {  // Tuple[()]
      expect('(');
      expect(')');
      return other("()");
    }
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    std::string name = s_.substr(start, pos_ - start);
    if (name.empty()) fail("expected a type name");
    std::vector<PyType> args;
    skip_spaces();
    if (peek('[')) {
      expect('[');
      args.push_back(type());
      skip_spaces();
      while (peek(',')) {
        expect(',');
        args.push_back(type());
        skip_spaces();
      }
      expect(']');
    }
    return make(name, std::move(args));
  }

  PyType make(const std::string& name, std::vector<PyType> args) {
    if (name == "Optional") return {PyType::Kind::union_, "", {args.at(0), cls("NoneType")}};
    if (name == "Union") return {PyType::Kind::union_, "", std::move(args)};
    if (name == "List") return {PyType::Kind::list, "", {args.at(0)}};
    if (name == "Tuple") return {PyType::Kind::tuple, "", std::move(args)};
    static const std::unordered_map<std::string, std::string> classes{{"Tensor", "torch.Tensor"},
                                                                      {"int", "int"},
                                                                      {"float", "float"},
                                                                      {"bool", "bool"},
                                                                      {"str", "str"},
                                                                      {"complex", "complex"},
                                                                      {"number", "numbers.Number"},
                                                                      {"Device", "torch.device"},
                                                                      {"Layout", "torch.layout"},
                                                                      {"NoneType", "NoneType"},
                                                                      {"QScheme", "torch.qscheme"},
                                                                      {"AnyEnumType", "enum.Enum"}};
    if (auto it = classes.find(name); it != classes.end()) return cls(it->second);
    // typing's generics and the TypeVar `t`: not classes, never matched by type.
    static const std::unordered_set<std::string> typing{"Any",      "Dict",   "Callable", "Generator",
                                                        "Iterator", "Type",   "Set",      "Sequence",
                                                        "Mapping",  "Future", "t",        "Awaitable"};
    if (typing.count(name) || name.rfind("__torch__.", 0) == 0) return other(name);
    fail("name '" + name + "' is not defined");
  }

  void skip_spaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void expect(char c) {
    skip_spaces();
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("annotation '" + s_ + "': NameError: " + why);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// ---- signatures ----------------------------------------------------------------

struct Param {
  std::string name;
  bool kwonly = false;
  bool positional_only = false;  // a schema argument named `from`, and those before it
  bool has_default = false;
  std::optional<Argument> default_value;  // nullopt with has_default: a default fxcpp cannot hold
  PyType annotation;
};
struct Signature {
  std::vector<Param> params;
  std::string shown;  // the schema, for messages
};

std::optional<Argument> to_argument(const c10::IValue& v) {
  if (v.isNone()) return Argument(None);
  if (v.isBool()) return Argument(v.toBool());
  if (v.isInt()) return Argument(v.toInt());
  if (v.isDouble()) return Argument(v.toDouble());
  if (v.isString()) return Argument(v.toStringRef());
  if (v.isDevice()) return Argument(v.toDevice());
  if (auto d = dtype_of(v)) return Argument(*d);
  if (v.isList()) {
    std::vector<Argument> items;
    for (const c10::IValue& e : v.toListRef()) {
      auto a = to_argument(e);
      if (!a) return std::nullopt;
      items.push_back(std::move(*a));
    }
    return Argument(List{std::move(items)});
  }
  if (v.isTuple()) {
    std::vector<Argument> items;
    for (const c10::IValue& e : v.toTupleRef().elements()) {
      auto a = to_argument(e);
      if (!a) return std::nullopt;
      items.push_back(std::move(*a));
    }
    return Argument(Tuple{std::move(items)});
  }
  return std::nullopt;
}

// FX's _torchscript_schema_to_signature; throws where inspect.Signature or
// the annotation's eval fail in Python.
Signature schema_to_signature(const c10::FunctionSchema& schema) {
  Signature sig;
  std::ostringstream shown;
  shown << schema;
  sig.shown = shown.str();
  std::unordered_set<std::string> names;
  for (const c10::Argument& a : schema.arguments()) {
    Param p;
    p.name = a.name() == "self" ? "input" : a.name();
    p.kwonly = a.kwarg_only();
    // FX 2.x makes `from` (a Python keyword) positional-only, and so every
    // argument before it; inspect.Parameter accepts a keyword name there.
    if (p.name == "from" && !p.kwonly) {
      p.positional_only = true;
      for (Param& before : sig.params) before.positional_only = true;
    }
    if ((!p.positional_only && fx::detail::is_python_keyword(p.name)) || !fx::detail::is_identifier(p.name))
      throw Error("ValueError: '" + p.name + "' is not a valid parameter name (in " + sig.shown + ")");
    if (!names.insert(p.name).second)
      throw Error("ValueError: duplicate parameter name: '" + p.name + "' (in " + sig.shown + ")");
    p.annotation = AnnotationParser(a.type()->annotation_str()).parse();
    if (a.default_value()) {
      p.has_default = true;
      p.default_value = to_argument(*a.default_value());
    }
    sig.params.push_back(std::move(p));
  }
  return sig;
}

// The Python functions of torch.nn.functional, torch.functional and torch
// (fx/python_function.h).
const std::unordered_map<std::string_view, Signature>& python_signatures(
    std::unordered_set<std::string_view>** unsupported) {
  static std::unordered_set<std::string_view> no;
  static const std::unordered_map<std::string_view, Signature> table = [] {
    std::unordered_map<std::string_view, Signature> out;
    for (const PythonFunction& f : python_functions()) {
      if (!f.supported) {
        no.insert(f.name);
        continue;
      }
      Signature sig;
      sig.shown = f.name;
      for (const PythonParam& p : f.params)
        sig.params.push_back(Param{p.name, p.kwonly, false, p.has_default, p.default_value, other("?")});
      out.emplace(f.name, std::move(sig));
    }
    return out;
  }();
  *unsupported = &no;
  return table;
}

// ---- binding -------------------------------------------------------------------

bool bind_arguments(const Signature& sig, size_t nargs, const std::vector<std::string_view>& keywords,
                    std::vector<int64_t>& slots, std::string& why) {
  return fast_bind(sig.params, nargs, keywords, slots, why);
}

std::vector<std::string_view> keyword_names(const Kwargs& kwargs) {
  std::vector<std::string_view> out;
  out.reserve(kwargs.size());
  for (const auto& kv : kwargs) out.push_back(kv.first);
  return out;
}

// _args_kwargs_to_normalized_args_kwargs after a successful bind.
std::optional<ArgsKwargsPair> normalized(const Signature& sig, const std::vector<int64_t>& slots,
                                         const Args& args, const Kwargs& kwargs, bool only_kwargs) {
  // FX supports no positional-only parameters but for one signature, that
  // of random_/uniform_: (input, from, to, *, generator).
  bool positional_only = false;
  for (const Param& p : sig.params) positional_only = positional_only || p.positional_only;
  if (positional_only) {
    static const char* const kRandomSignature[] = {"input", "from", "to", "generator"};
    if (sig.params.size() != 4) return std::nullopt;
    for (size_t p = 0; p < 4; ++p)
      if (sig.params[p].name != kRandomSignature[p]) return std::nullopt;
  }
  ArgsKwargsPair out;
  for (size_t p = 0; p < sig.params.size(); ++p) {
    const Argument* value = bound_argument(slots[p], args, kwargs);
    if (!value) {
      if (!sig.params[p].default_value) return std::nullopt;  // a default fxcpp cannot hold
      value = &*sig.params[p].default_value;
    }
    if (!only_kwargs && p < args.size())
      out.args.push_back(*value);
    else
      out.kwargs.emplace_back(sig.params[p].name, *value);
  }
  return out;
}

// ---- the types NormalizeArgs gives normalize_function ------------------------

// type(x) of a constant; nullopt for a node (FX's get_type gives None for it,
// meta["type"] aside) and for what holds nodes.
std::optional<PyType> scalar_type(const Argument& a) {
  const auto& s = a.storage();
  if (a.is_node()) return std::nullopt;
  if (std::holds_alternative<NoneType>(s)) return cls("NoneType");
  if (std::holds_alternative<bool>(s)) return cls("bool");
  if (std::holds_alternative<int64_t>(s)) return cls("int");
  if (std::holds_alternative<double>(s)) return cls("float");
  if (std::holds_alternative<std::string>(s)) return cls("str");
  if (std::holds_alternative<c10::ScalarType>(s)) return cls("torch.dtype");
  if (std::holds_alternative<c10::Device>(s)) return cls("torch.device");
  if (std::holds_alternative<c10::Layout>(s)) return cls("torch.layout");
  if (std::holds_alternative<c10::MemoryFormat>(s)) return cls("torch.memory_format");
  if (std::holds_alternative<EllipsisType>(s)) return cls("ellipsis");
  if (std::holds_alternative<Slice>(s)) return cls("slice");
  return std::nullopt;
}

// A positional argument's type: map_aggregate(get_type) then create_type_hint.
PyType positional_type(const Argument& a) {
  const std::vector<Argument>* items = nullptr;
  bool is_list = false;
  if (const auto* l = std::get_if<List>(&a.storage())) {
    items = &l->items;
    is_list = true;
  } else if (const auto* t = std::get_if<Tuple>(&a.storage())) {
    items = &t->items;
  }
  if (!items) {
    auto t = scalar_type(a);
    return t ? *t : other(a.is_node() ? "None" : "unknown");
  }
  auto hint = [&](PyType base) -> PyType {
    if (is_list) return {PyType::Kind::list, "", {std::move(base)}};
    return {PyType::Kind::tuple, "", {std::move(base), cls("ellipsis")}};
  };
  if (items->empty()) return hint(other("Any"));
  std::optional<PyType> base;
  for (const Argument& item : *items) {
    auto t = scalar_type(item);
    if (!t) return other("raw");  // issubclass fails on a non-class: FX keeps the raw list
    if (!base || is_subclass(t->name, base->name)) {
      if (!base) base = t;
      continue;
    }
    if (is_subclass(base->name, t->name))
      base = t;
    else
      return hint(other("Any"));
  }
  return hint(*base);
}

// A keyword argument's type: type() of the fetched value (no type hint).
PyType keyword_type(const Argument& a) {
  if (a.is_node()) return cls("torch.fx.proxy.Proxy");
  if (a.is<List>()) return cls("immutable_list");
  if (a.is<Tuple>()) return cls("tuple");
  if (a.is<Dict>()) return cls("immutable_dict");
  auto t = scalar_type(a);
  return t ? *t : other("unknown");
}

// ---- what a target's signatures are --------------------------------------------

struct Lookup {
  enum class Kind { none, python, builtin } kind = Kind::none;
  std::vector<Signature> signatures;
  std::string error;  // set: FX fails building the signatures
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The TorchScript operator torch.jit._builtins._find_builtin gives a builtin
// target, and the overload when the target names one ("" otherwise).
std::optional<std::pair<std::string, std::optional<std::string>>> builtin_operator(const std::string& name) {
  if (starts_with(name, "torch.ops.")) {
    const OpsName* parts = Target(name).ops_name();
    if (!parts) return std::nullopt;
    std::optional<std::string> overload;
    if (!parts->is_packet()) overload = std::string(parts->dispatcher_overload());
    return std::make_pair(parts->qualified_op(), overload);
  }
  // Spellings of torch's builtins (F's builtins are torch._C._nn's or torch's).
  static constexpr std::string_view kPrefixes[] = {"torch.nn.functional.",
                                                   "torch._C._nn.",
                                                   "torch._C._VariableFunctions.",
                                                   "torch._C._linalg.",
                                                   "torch._C._fft.",
                                                   "torch._C._special.",
                                                   "torch."};
  for (std::string_view p : kPrefixes) {
    if (!starts_with(name, p)) continue;
    std::string rest = name.substr(p.size());
    if (rest.empty() || rest.find('.') != std::string::npos) return std::nullopt;
    if (rest == "logsigmoid") rest = "log_sigmoid";  // F.logsigmoid is torch._C._nn.log_sigmoid
    return std::make_pair("aten::" + rest, std::nullopt);
  }
  return std::nullopt;
}

std::shared_ptr<const Lookup> make_lookup(const Target& target) {
  auto lookup = std::make_shared<Lookup>();
  const std::string& name = target.str();
  std::unordered_set<std::string_view>* unsupported = nullptr;
  const auto& python = python_signatures(&unsupported);
  if (auto it = python.find(name); it != python.end()) {
    lookup->kind = Lookup::Kind::python;
    lookup->signatures.push_back(it->second);
    return lookup;
  }
  if (unsupported->count(name) || starts_with(name, "torch.functional.")) return lookup;
  auto op = builtin_operator(name);
  if (!op) return lookup;
  const auto& operators = torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op->first));
  try {
    for (const auto& o : operators) {
      const c10::FunctionSchema& schema = o->schema();
      if (op->second && schema.overload_name() != *op->second) continue;
      lookup->signatures.push_back(schema_to_signature(schema));
    }
  } catch (const Error& e) {
    lookup->error = e.what();
  }
  if (!lookup->signatures.empty() || !lookup->error.empty()) lookup->kind = Lookup::Kind::builtin;
  return lookup;
}

std::shared_ptr<const Lookup> lookup_for(const Target& target) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<Target, std::shared_ptr<const Lookup>>();  // never destroyed
  std::lock_guard lock(mu);
  auto [it, fresh] = cache->try_emplace(target);
  if (fresh) it->second = make_lookup(target);
  return it->second;
}

}  // namespace

std::optional<ArgsKwargsPair> normalize_function(Target target, const Args& args, const Kwargs& kwargs,
                                                 bool normalize_to_only_use_kwargs) {
  auto lookup = lookup_for(target);
  const auto keywords = keyword_names(kwargs);
  std::vector<int64_t> slots;
  std::string why;
  switch (lookup->kind) {
    case Lookup::Kind::none:
      return std::nullopt;
    case Lookup::Kind::python: {
      const Signature& sig = lookup->signatures[0];
      if (!bind_arguments(sig, args.size(), keywords, slots, why))
        throw Error("normalize_function: TypeError: " + target.str() + "(): " + why);
      return normalized(sig, slots, args, kwargs, normalize_to_only_use_kwargs);
    }
    case Lookup::Kind::builtin:
      break;
  }
  if (!lookup->error.empty())
    throw Error("normalize_function: torch.fx cannot make a Python signature of " + target.str() +
                "'s schemas: " + lookup->error);
  std::vector<const Signature*> matched;
  std::vector<int64_t> matched_slots;
  for (const Signature& sig : lookup->signatures)
    if (bind_arguments(sig, args.size(), keywords, slots, why)) {
      matched.push_back(&sig);
      if (matched.size() == 1) matched_slots = slots;
    }
  if (matched.empty()) return std::nullopt;
  if (matched.size() == 1)
    return normalized(*matched[0], matched_slots, args, kwargs, normalize_to_only_use_kwargs);
  // Several schemas take these arguments: the first whose annotations the
  // argument types match.
  for (const Signature* sig : matched) {
    bind_arguments(*sig, args.size(), keywords, slots, why);
    bool matches = true;
    for (size_t p = 0; p < sig->params.size() && matches; ++p) {
      const int64_t s = slots[p];
      if (s < 0) continue;
      PyType t = static_cast<size_t>(s) < args.size()
                     ? positional_type(args[static_cast<size_t>(s)])
                     : keyword_type(kwargs[static_cast<size_t>(s) - args.size()].second);
      matches = type_matches(sig->params[p].annotation, t);
    }
    if (matches) return normalized(*sig, slots, args, kwargs, normalize_to_only_use_kwargs);
  }
  return std::nullopt;
}

std::optional<ArgsKwargsPair> normalize_module(const GraphModule& root, std::string_view target,
                                               const Args& args, const Kwargs& kwargs,
                                               bool normalize_to_only_use_kwargs) {
  torch::nn::Module* sub = root.get_submodule(target);
  if (!sub)
    throw Error("normalize_module: Tried to normalize node with target " + std::string(target) +
                " but root did not have that target!");
  const auto* m = dynamic_cast<const Module*>(sub);
  if (!m || !m->is_standard_leaf()) return std::nullopt;  // not a class of torch.nn
  Signature sig;
  sig.shown = m->type_name() + ".forward";
  for (const Module::Param& p : m->forward_params()) {
    Param param{p.name, false, false, p.default_value.has_value(), std::nullopt, other("?")};
    if (p.default_value) param.default_value = to_argument(p.default_value->ivalue());
    sig.params.push_back(std::move(param));
  }
  std::vector<int64_t> slots;
  std::string why;
  if (!bind_arguments(sig, args.size(), keyword_names(kwargs), slots, why))
    throw Error("normalize_module: TypeError: " + sig.shown + "() of '" + std::string(target) + "': " + why);
  return normalized(sig, slots, args, kwargs, normalize_to_only_use_kwargs);
}

}  // namespace fx::passes
