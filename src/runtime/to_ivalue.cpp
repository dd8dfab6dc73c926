// fx::Argument -> c10::IValue, and the slice / Ellipsis / Opaque conventions.

#include <fx/node.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include "module_ivalue.h"

namespace fx {

namespace {

// Slices and Ellipsis travel as capsules: an IValue kind that no ATen
// operator accepts and no user value is, so they cannot be confused with a
// tuple or a string.
struct SliceHolder : torch::CustomClassHolder {
  c10::IValue start, stop, step;
};
struct EllipsisHolder : torch::CustomClassHolder {};
// torch.dtype: a type of its own, as in Python, so that an overload taking a
// ScalarType is told apart from one taking an int (`x.view(torch.float16)`
// is view.dtype, not view(int[] size)).
struct DtypeHolder : torch::CustomClassHolder {
  explicit DtypeHolder(c10::ScalarType t) : type(t) {}
  c10::ScalarType type;
};
struct ModuleHolder : torch::CustomClassHolder {
  std::shared_ptr<Module> module;
};

// The deleter type marks an Opaque value as one made by make_opaque: a
// shared_ptr<const void> keeps its deleter's type, and std::get_deleter finds it.
struct OpaqueIValueDeleter {
  void operator()(const void* p) const { delete static_cast<const c10::IValue*>(p); }
};

template <class Holder>
const Holder* holder(const c10::IValue& v) {
  if (!v.isCapsule()) return nullptr;
  return dynamic_cast<const Holder*>(v.toCapsule().get());
}

c10::IValue convert(const Argument& a, const std::function<c10::IValue(const Node*)>* node_value) {
  auto rec = [&](const Argument& x) { return convert(x, node_value); };
  return std::visit(
      [&](const auto& v) -> c10::IValue {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, NoneType>) {
          return c10::IValue();
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
                             std::is_same_v<T, c10::Device>) {
          return c10::IValue(v);
        } else if constexpr (std::is_same_v<T, Node*>) {
          if (!node_value)
            throw Error("to_ivalue: argument %" + v->name() +
                        " is a node; its value must be substituted (use to_ivalue(arg, node_value))");
          return (*node_value)(v);
        } else if constexpr (std::is_same_v<T, Tuple>) {
          std::vector<c10::IValue> items;
          items.reserve(v.items.size());
          for (const auto& x : v.items) items.push_back(rec(x));
          return c10::ivalue::Tuple::create(std::move(items));
        } else if constexpr (std::is_same_v<T, List>) {
          std::vector<c10::IValue> items;
          items.reserve(v.items.size());
          for (const auto& x : v.items) items.push_back(rec(x));
          return list_ivalue(std::move(items));
        } else if constexpr (std::is_same_v<T, Dict>) {
          c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
          for (const auto& [k, x] : v.items) d.insert_or_assign(k, rec(x));
          return d;
        } else if constexpr (std::is_same_v<T, Slice>) {
          return slice_ivalue(rec(v.parts[0]), rec(v.parts[1]), rec(v.parts[2]));
        } else if constexpr (std::is_same_v<T, EllipsisType>) {
          return ellipsis_ivalue();
        } else if constexpr (std::is_same_v<T, c10::ScalarType>) {
          return dtype_ivalue(v);
        } else if constexpr (std::is_same_v<T, c10::Layout> || std::is_same_v<T, c10::MemoryFormat>) {
          return c10::IValue(static_cast<int64_t>(v));
        } else {
          static_assert(std::is_same_v<T, Opaque>);
          if (v.value && std::get_deleter<OpaqueIValueDeleter>(v.value))
            return *static_cast<const c10::IValue*>(v.value.get());
          throw Error("to_ivalue: the constant " + v.repr +
                      " has no runtime value (only Opaque values made by fx::make_opaque do)");
        }
      },
      a.storage());
}

}  // namespace

c10::IValue list_ivalue(std::vector<c10::IValue> items) {
  bool all_int = true, all_double = true, all_bool = true, all_tensor = true;
  for (const auto& v : items) {
    all_int = all_int && v.isInt();
    all_double = all_double && v.isDouble();
    all_bool = all_bool && v.isBool();
    all_tensor = all_tensor && v.isTensor();
  }
  if (all_int) {  // also the empty list, like TorchScript's default List[int]
    c10::List<int64_t> l;
    l.reserve(items.size());
    for (const auto& v : items) l.push_back(v.toInt());
    return l;
  }
  if (all_double) {
    c10::List<double> l;
    for (const auto& v : items) l.push_back(v.toDouble());
    return l;
  }
  if (all_bool) {
    c10::List<bool> l;
    for (const auto& v : items) l.push_back(v.toBool());
    return l;
  }
  if (all_tensor) {
    c10::List<at::Tensor> l;
    for (const auto& v : items) l.push_back(v.toTensor());
    return l;
  }
  c10::impl::GenericList l(c10::AnyType::get());
  for (auto& v : items) l.push_back(std::move(v));
  return l;
}

c10::IValue to_ivalue(const Argument& a) { return convert(a, nullptr); }

c10::IValue to_ivalue(const Argument& a, const std::function<c10::IValue(const Node*)>& node_value) {
  return convert(a, &node_value);
}

c10::IValue slice_ivalue(c10::IValue start, c10::IValue stop, c10::IValue step) {
  auto h = c10::make_intrusive<SliceHolder>();
  h->start = std::move(start);
  h->stop = std::move(stop);
  h->step = std::move(step);
  return c10::IValue::make_capsule(std::move(h));
}

c10::IValue ellipsis_ivalue() {
  static const c10::IValue e = c10::IValue::make_capsule(c10::make_intrusive<EllipsisHolder>());
  return e;
}

namespace runtime {

c10::IValue module_ivalue(std::shared_ptr<Module> module) {
  auto h = c10::make_intrusive<ModuleHolder>();
  h->module = std::move(module);
  return c10::IValue::make_capsule(std::move(h));
}

std::shared_ptr<Module> module_of(const c10::IValue& v) {
  const ModuleHolder* h = holder<ModuleHolder>(v);
  return h ? h->module : nullptr;
}

}  // namespace runtime

c10::IValue dtype_ivalue(c10::ScalarType t) {
  // One value per dtype, made once, so that `x.dtype is torch.float32` holds
  // as in Python (operator.is_ compares identities).
  static const std::vector<c10::IValue> interned = [] {
    std::vector<c10::IValue> all;
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i)
      all.push_back(
          c10::IValue::make_capsule(c10::make_intrusive<DtypeHolder>(static_cast<c10::ScalarType>(i))));
    return all;
  }();
  const auto i = static_cast<size_t>(t);
  if (i >= interned.size()) throw Error("dtype_ivalue: " + std::to_string(i) + " is not a ScalarType");
  return interned[i];
}

std::optional<c10::ScalarType> dtype_of(const c10::IValue& v) {
  const DtypeHolder* h = holder<DtypeHolder>(v);
  return h ? std::optional(h->type) : std::nullopt;
}

bool is_slice(const c10::IValue& v) { return holder<SliceHolder>(v) != nullptr; }
bool is_ellipsis(const c10::IValue& v) { return holder<EllipsisHolder>(v) != nullptr; }

std::vector<c10::IValue> slice_parts(const c10::IValue& v) {
  const SliceHolder* h = holder<SliceHolder>(v);
  if (!h) throw Error("slice_parts: a " + python_type_name(v) + " is not a slice");
  return {h->start, h->stop, h->step};
}

Opaque make_opaque(c10::IValue value, std::string repr) {
  std::shared_ptr<const void> p(new c10::IValue(std::move(value)), OpaqueIValueDeleter{});
  return Opaque{std::move(repr), std::move(p)};
}

std::string python_type_name(const c10::IValue& v) {
  if (v.isTensor()) return "Tensor";
  if (v.isNone()) return "NoneType";
  if (v.isBool()) return "bool";
  if (v.isInt()) return "int";
  if (v.isDouble()) return "float";
  if (v.isComplexDouble()) return "complex";
  if (v.isString()) return "str";
  if (v.isTuple()) {
    std::string s = "tuple[";
    bool first = true;
    for (const auto& e : v.toTupleRef().elements()) {
      s += (first ? "" : ", ") + python_type_name(e);
      first = false;
    }
    return s + "]";
  }
  if (v.isIntList()) return "list[int]";
  if (v.isDoubleList()) return "list[float]";
  if (v.isBoolList()) return "list[bool]";
  if (v.isTensorList()) return "list[Tensor]";
  if (v.isList()) return "list";
  if (v.isGenericDict()) return "dict";
  if (v.isDevice()) return "device";
  if (v.isSymInt()) return "SymInt";
  if (is_slice(v)) return "slice";
  if (is_ellipsis(v)) return "ellipsis";
  if (dtype_of(v)) return "dtype";
  return v.tagKind();
}

}  // namespace fx
