#pragma once
// fx::Value: what model code manipulates, FX's Proxy and a real value in one.
//
// A Value is either concrete (a c10::IValue: a tensor, a number, a bool, a
// string, None, a list or tuple) or symbolic (a proxy for a Node of the
// graph being traced). The same model code runs on both: on concrete values
// every operation runs on LibTorch; as soon as one operand is symbolic, the
// operation is recorded as a node instead, exactly as torch.fx's Proxy
// records it (`x + y` is call_function operator.add, `x.view(2, -1)` is
// call_method view, ...).
//
// What a symbolic value cannot do is be turned into a C++ bool, int or
// double, or be iterated without a known length: that is data-dependent
// control flow, and it throws fx::TraceError.

#include <fx/argument.h>
#include <fx/error.h>
#include <fx/target.h>

#include <ATen/core/ivalue.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace fx {

class Node;
class Tracer;
class Value;

// Data-dependent control flow, or another thing symbolic tracing cannot do.
class TraceError : public Error {
 public:
  using Error::Error;
};

// A keyword argument: `x.clamp(fx::kw("min", 0.0), fx::kw("max", 1.0))`.
struct Kw;
using ValueKwargs = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  // ---- concrete values ----
  Value() = default;  // None
  Value(NoneType) {}
  Value(EllipsisType e) : v_(Argument(e)) {}
  Value(bool b) : v_(c10::IValue(b)) {}
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Value(T i)
      : v_(c10::IValue(static_cast<int64_t>(i))) {}
  template <class T>
  requires std::is_floating_point_v<T> Value(T d) : v_(c10::IValue(static_cast<double>(d))) {}
  Value(const char* s) : v_(c10::IValue(std::string(s))) {}
  Value(std::string s) : v_(c10::IValue(std::move(s))) {}
  Value(const at::Tensor& t) : v_(c10::IValue(t)) {}
  Value(c10::ScalarType t) : v_(Argument(t)) {}
  Value(c10::Device d) : v_(c10::IValue(d)) {}
  Value(c10::Layout l) : v_(Argument(l)) {}
  Value(c10::MemoryFormat m) : v_(Argument(m)) {}
  Value(c10::IValue v) : v_(std::move(v)) {}

  // Sequences, which may hold symbolic values (`torch.cat([a, b])`).
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  // Python's slice(start, stop, step), for indexing: x[fx::Value::slice(fx::None, 2)].
  static Value slice(Value start, Value stop, Value step = None);
  // A Python dict with str keys, in order (a forward returning
  // `{'logits': y, 'probs': p}`): recorded as a dict argument, run as a
  // c10::Dict. Indexed with its keys: `d["logits"]`.
  static Value dict(std::vector<std::pair<std::string, Value>> items);

  // ---- symbolic values ----
  static Value proxy(Node* node, Tracer* tracer);
  bool is_proxy() const { return std::holds_alternative<Proxy>(v_); }
  // The node this value stands for (nullptr for a concrete value).
  Node* node() const;
  Tracer* tracer() const;
  // True when this value, or anything inside it, is symbolic.
  bool has_proxy() const;

  // ---- reading concrete values ----
  bool is_none() const;
  bool is_sequence() const { return std::holds_alternative<std::shared_ptr<const Seq>>(v_); }
  // A Python list / tuple, whether built with list()/tuple() or a concrete
  // IValue list/tuple (a symbolic value is neither: its type is unknown).
  bool is_list() const;
  bool is_tuple() const;
  // A Python dict, built with dict() or a concrete c10::Dict.
  bool is_dict() const;
  // The keys of a dict, in order; throws for anything else.
  std::vector<std::string> keys() const;
  // The concrete value; throws TraceError for a symbolic one.
  c10::IValue ivalue() const;
  at::Tensor tensor() const;
  // The items of a list/tuple; throws TraceError for a symbolic value, whose
  // length is unknown (use unpack(n) when the length is known).
  // (For a dict: its values, in the order of keys().)
  std::vector<Value> items() const;
  // n values `self[0]`, ..., `self[n-1]`: how to unpack a symbolic tuple.
  std::vector<Value> unpack(size_t n) const;

  // Data-dependent control flow: these throw TraceError for symbolic values.
  explicit operator bool() const;
  int64_t to_int() const;
  double to_double() const;

  // ---- Python operations (recorded like torch.fx's Proxy) ----
  Value operator[](const Value& index) const;  // operator.getitem
  // builtins.getattr(self, name): x.attr("shape"), x.attr("dtype"), ...
  Value attr(std::string_view name) const;
  Value shape() const { return attr("shape"); }
  Value dtype() const { return attr("dtype"); }
  Value device() const { return attr("device"); }
  Value T() const { return attr("T"); }

  // A Tensor method: call_method `name` with self first.
  Value call_method(std::string_view name, std::vector<Value> args = {}, ValueKwargs kwargs = {}) const;

#define FX_VALUE_METHOD(name)                         \
  template <class... A>                               \
  Value name(A&&... a) const {                        \
    return call_packed(#name, std::forward<A>(a)...); \
  }
#include <fx/detail/tensor_methods.inc>
#undef FX_VALUE_METHOD
  // Methods whose names are C++ keywords or clash with the above.
  template <class... A>
  Value float_(A&&... a) const {
    return call_packed("float", std::forward<A>(a)...);
  }
  template <class... A>
  Value int_(A&&... a) const {
    return call_packed("int", std::forward<A>(a)...);
  }
  template <class... A>
  Value bool_(A&&... a) const {
    return call_packed("bool", std::forward<A>(a)...);
  }
  template <class... A>
  Value double_(A&&... a) const {
    return call_packed("double", std::forward<A>(a)...);
  }
  template <class... A>
  Value long_(A&&... a) const {
    return call_packed("long", std::forward<A>(a)...);
  }

 private:
  friend class Tracer;
  struct Proxy {
    Node* node;
    Tracer* tracer;
  };
  enum class SeqKind { list, tuple, slice, dict };
  struct Seq {
    SeqKind kind;
    std::vector<Value> items;
    std::vector<std::string> keys;  // a dict's, one per item
  };
  template <class... A>
  Value call_packed(std::string_view name, A&&... a) const;

  // Argument: Python constants an IValue cannot tell apart from an int
  // (dtype, layout, memory_format) and Ellipsis.
  std::variant<c10::IValue, Proxy, std::shared_ptr<const Seq>, Argument> v_;
};

struct Kw {
  std::string name;
  Value value;
};
inline Kw kw(std::string name, Value value) { return Kw{std::move(name), std::move(value)}; }

namespace detail {
// Splits a C++ argument pack into positional values and fx::kw(...) keywords.
inline void pack_into(std::vector<Value>&, ValueKwargs&) {}
template <class A, class... Rest>
void pack_into(std::vector<Value>& args, ValueKwargs& kwargs, A&& a, Rest&&... rest) {
  if constexpr (std::is_same_v<std::decay_t<A>, Kw>)
    kwargs.emplace_back(a.name, a.value);
  else
    args.emplace_back(std::forward<A>(a));
  pack_into(args, kwargs, std::forward<Rest>(rest)...);
}
}  // namespace detail

// Records or runs a call_function / call_method: the one place where a
// Value operation becomes either a node or a LibTorch call.
Value call_function(const Target& target, std::vector<Value> args = {}, ValueKwargs kwargs = {});
template <class... A>
Value call(const Target& target, A&&... a) {
  std::vector<Value> args;
  ValueKwargs kwargs;
  detail::pack_into(args, kwargs, std::forward<A>(a)...);
  return call_function(target, std::move(args), std::move(kwargs));
}

template <class... A>
Value Value::call_packed(std::string_view name, A&&... a) const {
  std::vector<Value> args;
  ValueKwargs kwargs;
  detail::pack_into(args, kwargs, std::forward<A>(a)...);
  return call_method(name, std::move(args), std::move(kwargs));
}

// Python's operators, recorded as operator.* (reflected forms such as
// `2 - x` are operator.sub(2, x), as FX records them).
Value operator+(const Value& a, const Value& b);
Value operator-(const Value& a, const Value& b);
Value operator*(const Value& a, const Value& b);
Value operator/(const Value& a, const Value& b);
Value operator%(const Value& a, const Value& b);
Value operator&(const Value& a, const Value& b);
Value operator|(const Value& a, const Value& b);
Value operator^(const Value& a, const Value& b);
Value operator<<(const Value& a, const Value& b);
Value operator>>(const Value& a, const Value& b);
Value operator==(const Value& a, const Value& b);
Value operator!=(const Value& a, const Value& b);
Value operator<(const Value& a, const Value& b);
Value operator<=(const Value& a, const Value& b);
Value operator>(const Value& a, const Value& b);
Value operator>=(const Value& a, const Value& b);
Value operator-(const Value& a);
Value operator+(const Value& a);
Value operator~(const Value& a);
// Python's `//`, `**` and `@`, which C++ lacks.
Value floordiv(const Value& a, const Value& b);
Value pow(const Value& a, const Value& b);
Value matmul_op(const Value& a, const Value& b);
// `x += y`: in place for a concrete tensor x, as Python's Tensor.__iadd__
// (so that ATen-level capture records add_ where PyTorch's eager code runs
// it); `x = x + y` otherwise, as for a Proxy, which has no __iadd__.
Value& operator+=(Value& a, const Value& b);
inline Value& operator-=(Value& a, const Value& b) { return a = a - b; }
inline Value& operator*=(Value& a, const Value& b) { return a = a * b; }
inline Value& operator/=(Value& a, const Value& b) { return a = a / b; }

}  // namespace fx
