// Calling an ATen overload set: choose the overload per call the way Python's
// argument parser does, cache the choice per argument-type signature, convert
// the arguments to the schema's types, call through the dispatcher.

#include "internal.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace fx::runtime {

namespace {

// A compact description of a value's type; equal keys bind the same way.
void append_key(std::string& key, const c10::IValue& v) {
  if (v.isTensor()) {
    key += 'T';
  } else if (v.isNone()) {
    key += 'N';
  } else if (v.isBool()) {
    key += 'b';
  } else if (v.isInt()) {
    key += 'i';
  } else if (v.isDouble()) {
    key += 'd';
  } else if (v.isComplexDouble()) {
    key += 'c';
  } else if (v.isString()) {
    key += 's';
  } else if (v.isDevice()) {
    key += 'D';
  } else if (v.isIntList()) {
    key += 'I';
  } else if (v.isDoubleList()) {
    key += 'F';
  } else if (v.isBoolList()) {
    key += 'B';
  } else if (v.isTensorList()) {
    key += 'L';
  } else if (v.isTuple() || v.isList()) {
    key += v.isTuple() ? '(' : '[';
    for (const auto& e : sequence_items(v)) append_key(key, e);
    key += v.isTuple() ? ')' : ']';
  } else if (dtype_of(v)) {
    key += 'y';
  } else {
    key += '?';
  }
}

bool is_scalar_type(const c10::TypePtr& t) {
  const c10::Type* u = t.get();
  if (u->kind() == c10::TypeKind::OptionalType) u = u->castRaw<c10::OptionalType>()->getElementType().get();
  return u->kind() == c10::TypeKind::ScalarTypeType;
}

bool is_int_list_type(const c10::TypePtr& t) {
  const c10::Type* u = t.get();
  if (u->kind() == c10::TypeKind::OptionalType) u = u->castRaw<c10::OptionalType>()->getElementType().get();
  if (u->kind() != c10::TypeKind::ListType) return false;
  auto k = u->castRaw<c10::ListType>()->getElementType()->kind();
  return k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType;
}

// How loosely an argument may fit, tried in this order so that an exact fit
// wins: as it is; a number where a Tensor is expected; and a 0-dim tensor
// where a number is expected (Python's parser takes one that needs no grad,
// an integral one for an int: `x.expand(n)` with n a tensor).
enum Looseness { exact = 0, numbers_as_tensors = 1, tensors_as_numbers = 2, kLooseness = 3 };

// A 0-dim tensor read as an int (integral, not bool) or a float; nullopt
// for any other value.
std::optional<c10::IValue> tensor_as_number(const c10::IValue& v, bool integral) {
  if (!v.isTensor()) return std::nullopt;
  const at::Tensor& t = v.toTensor();
  if (t.dim() != 0 || t.requires_grad()) return std::nullopt;
  if (integral) {
    if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) return std::nullopt;
    return t.item<int64_t>();
  }
  if (t.is_complex()) return std::nullopt;
  return t.item<double>();
}

// Converts `v` to the schema type `t` (with fixed list size N), the way
// Python's argument parser accepts it. nullopt when it does not fit. `t` is
// the argument's real type: a ScalarType takes a dtype value (and passes it
// on as ATen's int), never an int, as in Python.
std::optional<c10::IValue> fit(const c10::TypePtr& t, c10::optional<int32_t> N, const c10::IValue& v,
                               int loose) {
  switch (t->kind()) {
    case c10::TypeKind::AnyType:
      return v;
    case c10::TypeKind::TensorType:
      if (v.isTensor()) return v;
      if (loose >= numbers_as_tensors && is_number(v)) return wrapped_scalar(v);
      return std::nullopt;
    case c10::TypeKind::OptionalType:
      if (v.isNone()) return v;
      return fit(t->castRaw<c10::OptionalType>()->getElementType(), N, v, loose);
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      if (v.isInt()) return v;
      if (loose >= tensors_as_numbers) return tensor_as_number(v, true);
      return std::nullopt;
    case c10::TypeKind::FloatType:
      if (v.isDouble()) return v;
      if (v.isInt()) return static_cast<double>(v.toInt());
      if (loose >= tensors_as_numbers) return tensor_as_number(v, false);
      return std::nullopt;
    case c10::TypeKind::ComplexType:
      if (v.isComplexDouble()) return v;
      if (v.isDouble() || v.isInt()) return c10::complex<double>(to_double("", v), 0.0);
      return std::nullopt;
    case c10::TypeKind::BoolType:
      if (v.isBool()) return v;
      return std::nullopt;
    case c10::TypeKind::ScalarTypeType:
      if (auto d = dtype_of(v)) return static_cast<int64_t>(*d);
      return std::nullopt;
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:  // ints at run time (TorchScript's encoding)
      if (v.isInt()) return v;
      return std::nullopt;
    case c10::TypeKind::NumberType:
      if (is_number(v) || v.isComplexDouble()) return v;
      if (loose >= tensors_as_numbers && v.isTensor() && v.toTensor().dim() == 0 &&
          !v.toTensor().requires_grad())
        return v.toTensor().item();
      return std::nullopt;
    case c10::TypeKind::StringType:
      if (v.isString()) return v;
      return std::nullopt;
    case c10::TypeKind::DeviceObjType:
      if (v.isDevice()) return v;
      if (v.isString()) {
        try {
          return c10::Device(v.toStringRef());
        } catch (const c10::Error&) {
          return std::nullopt;
        }
      }
      return std::nullopt;
    case c10::TypeKind::ListType: {
      const c10::TypePtr& elem = t->castRaw<c10::ListType>()->getElementType();
      const bool seq = is_sequence(v);
      switch (elem->kind()) {
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType: {
          if (v.isIntList()) return v;
          if (v.isInt() && N)
            return c10::List<int64_t>(std::vector<int64_t>(static_cast<size_t>(*N), v.toInt()));
          if (!seq) return std::nullopt;
          c10::List<int64_t> l;
          for (const auto& e : sequence_items(v)) {
            auto i = e.isInt()                     ? std::optional(e)
                     : loose >= tensors_as_numbers ? tensor_as_number(e, true)
                                                   : std::nullopt;
            if (!i) return std::nullopt;
            l.push_back(i->toInt());
          }
          return l;
        }
        case c10::TypeKind::FloatType: {
          if (v.isDoubleList()) return v;
          if ((v.isDouble() || v.isInt()) && N)
            return c10::List<double>(std::vector<double>(static_cast<size_t>(*N), to_double("", v)));
          if (!seq) return std::nullopt;
          c10::List<double> l;
          for (const auto& e : sequence_items(v)) {
            if (!(e.isDouble() || e.isInt())) return std::nullopt;
            l.push_back(to_double("", e));
          }
          return l;
        }
        case c10::TypeKind::BoolType: {
          if (v.isBoolList()) return v;
          if (!seq) return std::nullopt;
          c10::List<bool> l;
          for (const auto& e : sequence_items(v)) {
            if (!e.isBool()) return std::nullopt;
            l.push_back(e.toBool());
          }
          return l;
        }
        case c10::TypeKind::TensorType: {
          if (v.isTensorList()) return v;
          if (!seq) return std::nullopt;
          c10::List<at::Tensor> l;
          for (const auto& e : sequence_items(v)) {
            if (!e.isTensor()) return std::nullopt;
            l.push_back(e.toTensor());
          }
          return l;
        }
        case c10::TypeKind::OptionalType: {
          if (elem->castRaw<c10::OptionalType>()->getElementType()->kind() != c10::TypeKind::TensorType)
            break;
          if (!seq) return std::nullopt;
          c10::List<c10::optional<at::Tensor>> l;
          for (const auto& e : sequence_items(v)) {
            if (e.isNone())
              l.push_back(c10::nullopt);
            else if (e.isTensor())
              l.push_back(e.toTensor());
            else
              return std::nullopt;
          }
          return l;
        }
        default:
          break;
      }
      if (!seq) return std::nullopt;
      c10::impl::GenericList l(elem);
      for (const auto& e : sequence_items(v)) {
        auto f = fit(elem, c10::nullopt, e, loose);
        if (!f) return std::nullopt;
        l.push_back(std::move(*f));
      }
      return l;
    }
    default:
      return std::nullopt;  // Generator, Storage, Dimname lists of other kinds...: not from a graph
  }
}

bool is_out_overload(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments())
    if (a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite()) return true;
  const std::string& o = s.overload_name();
  return o == "out" || (o.size() > 4 && o.compare(o.size() - 4, 4, "_out") == 0);
}

// ---- specialized calls ---------------------------------------------------------
// A call site whose overload takes only Tensors and Scalars and returns one
// Tensor (the pointwise ops, most of a traced graph's small calls) runs
// through the typed (unboxed) dispatcher entry, as C++ code calling at::add
// does: no argument key, no cache lookup, no stack, no boxing.

// One parameter of the chosen overload: a node's tensor (the site's
// argument `arg`), or a fixed value (a constant argument or the schema
// default, converted once).
struct FixedParam {
  int arg = -1;
  at::Tensor tensor;
  at::Scalar scalar;
};

template <class P>
P param_value(const FixedParam& p, const c10::IValue* slots, const int* site_slots);
template <>
const at::Tensor& param_value<const at::Tensor&>(const FixedParam& p, const c10::IValue* slots,
                                                 const int* site_slots) {
  return p.arg >= 0 ? slots[site_slots[p.arg]].toTensor() : p.tensor;
}
template <>
const at::Scalar& param_value<const at::Scalar&>(const FixedParam& p, const c10::IValue*, const int*) {
  return p.scalar;
}

template <class... P>
class TypedCall final : public SpecializedCall {
 public:
  // Throws c10::Error when the operator's kernels have another C++ signature.
  TypedCall(const std::string& display, const c10::OperatorHandle& op, std::vector<FixedParam> params)
      : op_(op.typed<at::Tensor(P...)>()),
        what_(display + " (" + c10::toString(op.schema().operator_name()) + "): "),
        params_(std::move(params)) {
    for (const auto& p : params_)
      if (p.arg >= 0) tensor_args_.push_back(p.arg);
  }

  bool try_call(const c10::IValue* slots, const int* site_slots, c10::IValue& result) const override {
    for (int a : tensor_args_)
      if (!slots[site_slots[a]].isTensor()) return false;
    try {
      result = run(slots, site_slots, std::index_sequence_for<P...>{});
    } catch (const c10::Error& e) {
      throw Error(what_ + e.what_without_backtrace());
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(what_ + e.what());
    }
    return true;
  }

 private:
  template <size_t... I>
  at::Tensor run(const c10::IValue* slots, const int* site_slots, std::index_sequence<I...>) const {
    return op_.call(param_value<P>(params_[I], slots, site_slots)...);
  }

  c10::TypedOperatorHandle<at::Tensor(P...)> op_;
  std::string what_;  // message prefix: the target and the overload
  std::vector<FixedParam> params_;
  std::vector<int> tensor_args_;
};

using T = const at::Tensor&;
using S = const at::Scalar&;

// The typed call of `op` for parameters of the kinds in `kinds` ('T', 'S');
// nullptr for a combination not instantiated here.
std::shared_ptr<const SpecializedCall> make_typed_call(const std::string& display,
                                                       const c10::OperatorHandle& op,
                                                       const std::string& kinds,
                                                       std::vector<FixedParam> params) {
  if (kinds == "T") return std::make_shared<TypedCall<T>>(display, op, std::move(params));
  if (kinds == "TT") return std::make_shared<TypedCall<T, T>>(display, op, std::move(params));
  if (kinds == "TS") return std::make_shared<TypedCall<T, S>>(display, op, std::move(params));
  if (kinds == "TTS") return std::make_shared<TypedCall<T, T, S>>(display, op, std::move(params));
  if (kinds == "TSS") return std::make_shared<TypedCall<T, S, S>>(display, op, std::move(params));
  return nullptr;
}

class AtenCallable final : public Callable {
 public:
  AtenCallable(std::string display, std::vector<c10::OperatorHandle> ops, bool method, bool varargs)
      : display_(std::move(display)), method_(method), varargs_(varargs) {
    std::stable_sort(ops.begin(), ops.end(), [](const c10::OperatorHandle& a, const c10::OperatorHandle& b) {
      const auto& sa = a.schema();
      const auto& sb = b.schema();
      auto rank = [](const c10::FunctionSchema& s) {
        return std::make_tuple(is_out_overload(s), !s.overload_name().empty(), s.overload_name());
      };
      return rank(sa) < rank(sb);
    });
    ops_ = std::move(ops);
    // Python returns named tuples (torch.return_types.max: values, indices) where
    // the schema names its results; keep the names for getattr(result, "values").
    for (const auto& op : ops_) {
      const auto& rets = op.schema().returns();
      std::vector<std::string> names;
      std::vector<c10::TypePtr> types;
      for (const auto& r : rets) {
        if (r.name().empty()) break;
        names.push_back(r.name());
        types.push_back(r.type());
      }
      uint64_t dtypes = 0;
      for (size_t i = 0; i < rets.size() && i < 64; ++i)
        if (is_scalar_type(rets[i].real_type())) dtypes |= uint64_t{1} << i;
      dtype_returns_.push_back(dtypes);
      if (rets.size() > 1 && names.size() == rets.size()) {
        std::string base = op.schema().name().substr(op.schema().name().find("::") + 2);
        return_types_.push_back(
            c10::TupleType::createNamed(c10::QualifiedName("torch.return_types." + base), names, types));
      } else {
        return_types_.push_back(nullptr);
      }
    }
  }

  c10::IValue call(std::vector<c10::IValue> args, IValueKwargs kwargs) const override {
    std::string key;
    key.reserve(16);
    for (const auto& a : args) append_key(key, a);
    for (const auto& [k, v] : kwargs) {
      key += '|';
      key += k;
      key += '=';
      append_key(key, v);
    }
    int choice = -1;
    {
      std::shared_lock lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) choice = it->second;
    }
    torch::jit::Stack stack;
    if (choice >= 0) {
      if (!bind_schema(ops_[static_cast<size_t>(choice / kLooseness)].schema(), args, kwargs,
                       choice % kLooseness, &stack))
        choice = -1;  // cannot happen for equal keys; rematch to be safe
    }
    if (choice < 0) {
      for (int loose = exact; loose < kLooseness && choice < 0; ++loose) {
        for (size_t i = 0; i < ops_.size(); ++i) {
          stack.clear();
          if (bind_schema(ops_[i].schema(), args, kwargs, loose, &stack)) {
            choice = static_cast<int>(i) * kLooseness + loose;
            break;
          }
        }
      }
      if (choice < 0) throw Error(no_match(args, kwargs));
      std::unique_lock lock(mu_);
      cache_.emplace(std::move(key), choice);
    }
    const c10::OperatorHandle& op = ops_[static_cast<size_t>(choice / kLooseness)];
    try {
      op.callBoxed(stack);
    } catch (const c10::Error& e) {
      throw Error(display_ + " (" + c10::toString(op.schema().operator_name()) +
                  "): " + e.what_without_backtrace());
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {  // some kernels throw std::runtime_error
      throw Error(display_ + " (" + c10::toString(op.schema().operator_name()) + "): " + e.what());
    }
    const uint64_t dtypes = dtype_returns_[static_cast<size_t>(choice / kLooseness)];
    for (size_t i = 0; i < stack.size(); ++i) {
      c10::IValue& v = stack[i];
      if (v.isSymInt()) v = v.toSymInt().expect_int();
      // ATen returns a ScalarType as an int; Python returns a torch.dtype.
      if (i < 64 && (dtypes >> i & 1) && v.isInt()) v = dtype_ivalue(static_cast<c10::ScalarType>(v.toInt()));
      // Python's bindings return Tensor[] as a tuple (torch.ops.* keeps the list).
      if (tuple_lists_ && v.isTensorList()) {
        auto l = v.toTensorVector();
        v = c10::ivalue::Tuple::create(std::vector<c10::IValue>(l.begin(), l.end()));
      }
    }
    if (stack.empty()) return c10::IValue();
    if (stack.size() == 1) return std::move(stack[0]);
    if (const auto& t = return_types_[static_cast<size_t>(choice / kLooseness)])
      return c10::ivalue::Tuple::createNamed(std::move(stack), t);
    return c10::ivalue::Tuple::create(std::move(stack));
  }

  // The overload call() would choose for tensors in the node slots and these
  // constants (the strict pass only), called typed when its parameters are
  // Tensors and Scalars and it returns one Tensor.
  std::shared_ptr<const SpecializedCall> specialize(const std::vector<SiteArg>& site) const override {
    std::vector<c10::IValue> sample;
    sample.reserve(site.size());
    for (const auto& a : site) sample.push_back(a.slot >= 0 ? c10::IValue(at::Tensor()) : a.constant);
    torch::jit::Stack stack;
    const c10::OperatorHandle* chosen = nullptr;
    for (const auto& op : ops_) {
      stack.clear();
      if (bind_schema(op.schema(), sample, {}, exact, &stack)) {
        chosen = &op;
        break;
      }
    }
    if (!chosen) return nullptr;
    const auto& schema = chosen->schema();
    const auto& params = schema.arguments();
    if (schema.returns().size() != 1 || schema.returns()[0].type()->kind() != c10::TypeKind::TensorType ||
        schema.is_vararg() || schema.is_varret() || stack.size() != params.size() ||
        site.size() > params.size())
      return nullptr;
    std::string kinds;
    std::vector<FixedParam> fixed(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].alias_info()) return nullptr;  // in-place and out= overloads stay boxed
      const bool from_slot = i < site.size() && site[i].slot >= 0;
      switch (params[i].type()->kind()) {
        case c10::TypeKind::TensorType:
          kinds += 'T';
          if (from_slot)
            fixed[i].arg = static_cast<int>(i);
          else if (stack[i].isTensor())
            fixed[i].tensor = stack[i].toTensor();
          else
            return nullptr;
          break;
        case c10::TypeKind::NumberType:
          if (from_slot || !(is_number(stack[i]) || stack[i].isComplexDouble())) return nullptr;
          kinds += 'S';
          fixed[i].scalar = stack[i].toScalar();
          break;
        default:
          return nullptr;
      }
    }
    try {
      return make_typed_call(display_, *chosen, kinds, std::move(fixed));
    } catch (const c10::Error&) {
      return nullptr;  // kernels registered with another C++ signature: stay boxed
    }
  }

  std::string describe() const override {
    std::ostringstream os;
    os << display_ << " -> ";
    for (size_t i = 0; i < ops_.size(); ++i) os << (i ? " | " : "") << ops_[i].schema();
    return os.str();
  }

 private:
  bool bind_schema(const c10::FunctionSchema& s, const std::vector<c10::IValue>& args,
                   const IValueKwargs& kwargs, int loose, torch::jit::Stack* out) const {
    const auto& params = s.arguments();
    size_t npos = 0;
    while (npos < params.size() && !params[npos].kwarg_only()) ++npos;
    std::vector<std::optional<c10::IValue>> slots(params.size());
    // Python's *size: `x.view(2, 3)`, `torch.zeros(2, 3)` — a signature whose only
    // positional parameter (after self) is an int list takes trailing ints.
    const size_t self_off = method_ ? 1 : 0;
    const std::vector<c10::IValue>* pos = &args;
    std::vector<c10::IValue> packed;
    auto as_int = [&](const c10::IValue& v) -> std::optional<c10::IValue> {
      if (v.isInt()) return v;
      return loose >= tensors_as_numbers ? tensor_as_number(v, true) : std::nullopt;
    };
    if (varargs_ && npos == self_off + 1 && args.size() > self_off &&
        is_int_list_type(params[self_off].type()) &&
        std::all_of(args.begin() + static_cast<std::ptrdiff_t>(self_off), args.end(),
                    [&](const c10::IValue& v) { return as_int(v).has_value(); })) {
      c10::List<int64_t> l;
      for (size_t i = self_off; i < args.size(); ++i) l.push_back(as_int(args[i])->toInt());
      packed.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(self_off));
      packed.emplace_back(std::move(l));
      pos = &packed;
    }
    if (pos->size() > npos) return false;
    for (size_t i = 0; i < pos->size(); ++i) {
      auto f = fit(params[i].real_type(), params[i].N(), (*pos)[i], loose);
      if (!f) return false;
      slots[i] = std::move(*f);
    }
    for (const auto& [k, v] : kwargs) {
      size_t i = 0;
      for (; i < params.size(); ++i) {
        const std::string& n = params[i].name();
        if (n == k || (!method_ && n == "self" && k == "input")) break;
      }
      if (i == params.size() || slots[i]) return false;
      if (method_ && i == 0) return false;
      auto f = fit(params[i].real_type(), params[i].N(), v, loose);
      if (!f) return false;
      slots[i] = std::move(*f);
    }
    out->reserve(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (slots[i]) {
        out->push_back(std::move(*slots[i]));
      } else if (params[i].default_value()) {
        out->push_back(*params[i].default_value());
      } else {
        return false;
      }
    }
    return true;
  }

  std::string no_match(const std::vector<c10::IValue>& args, const IValueKwargs& kwargs) const {
    std::ostringstream os;
    os << display_ << ": no overload accepts the arguments (";
    bool first = true;
    for (const auto& a : args) {
      os << (first ? "" : ", ") << python_type_name(a);
      first = false;
    }
    for (const auto& [k, v] : kwargs) {
      os << (first ? "" : ", ") << k << "=" << python_type_name(v);
      first = false;
    }
    os << "); candidates:";
    for (const auto& op : ops_) os << "\n  " << op.schema();
    return os.str();
  }

  std::string display_;
  std::vector<c10::OperatorHandle> ops_;
  std::vector<c10::TupleTypePtr> return_types_;  // per op; null when unnamed
  std::vector<uint64_t> dtype_returns_;          // per op; bit i: result i is a ScalarType
  bool method_;
  bool varargs_;
  bool tuple_lists_ = varargs_;  // not torch.ops.*
  mutable std::shared_mutex mu_;
  mutable std::unordered_map<std::string, int> cache_;
};

}  // namespace

std::shared_ptr<const Callable> make_aten_callable(std::string display, std::vector<c10::OperatorHandle> ops,
                                                   bool method) {
  const bool varargs = display.rfind("torch.ops.", 0) != 0;
  return std::make_shared<AtenCallable>(std::move(display), std::move(ops), method, varargs);
}

}  // namespace fx::runtime
