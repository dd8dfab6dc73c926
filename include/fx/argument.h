#pragma once
// fx::Argument: what a node argument can be, as in torch.fx.
//
//   None, bool, int, float, str, Node, tuple, list, dict (str keys, ordered),
//   slice, Ellipsis, torch.dtype, torch.device, torch.layout,
//   torch.memory_format, and an opaque constant that only knows its repr.
//
// Tuples and lists are different kinds, exactly as in Python: FX prints
// `(x,)` for one and `[x]` for the other.

#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace fx {

class Node;
class Argument;

struct NoneType {
  bool operator==(const NoneType&) const = default;
};
inline constexpr NoneType None{};

struct EllipsisType {
  bool operator==(const EllipsisType&) const = default;
};
inline constexpr EllipsisType Ellipsis{};

struct Tuple {
  std::vector<Argument> items;
  bool operator==(const Tuple&) const;
};
struct List {
  std::vector<Argument> items;
  bool operator==(const List&) const;
};
// A dict with string keys, in insertion order (FX's immutable_dict).
struct Dict {
  std::vector<std::pair<std::string, Argument>> items;
  bool operator==(const Dict&) const;
};
// slice(start, stop, step); each part is usually None, an int or a Node.
struct Slice {
  std::vector<Argument> parts;  // always 3
  bool operator==(const Slice&) const;
};
// A constant fxcpp cannot represent natively. It prints as `repr` and
// carries its value for the runtime. Two opaques are equal when they share
// the same value.
struct Opaque {
  std::string repr;
  std::shared_ptr<const void> value;
  bool operator==(const Opaque& o) const { return value == o.value && repr == o.repr; }
};

class Argument {
 public:
  using Storage =
      std::variant<NoneType, bool, int64_t, double, std::string, Node*, Tuple, List, Dict, Slice,
                   EllipsisType, c10::ScalarType, c10::Device, c10::Layout, c10::MemoryFormat, Opaque>;

  Argument() = default;
  Argument(NoneType) {}
  Argument(bool b) : v_(b) {}
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Argument(T i) : v_(static_cast<int64_t>(i)) {}
  template <class T>
  requires std::is_floating_point_v<T> Argument(T d) : v_(static_cast<double>(d)) {}
  Argument(const char* s) : v_(std::string(s)) {}
  Argument(std::string s) : v_(std::move(s)) {}
  Argument(std::string_view s) : v_(std::string(s)) {}
  Argument(Node* n);
  Argument(Tuple t) : v_(std::move(t)) {}
  Argument(List l) : v_(std::move(l)) {}
  Argument(Dict d) : v_(std::move(d)) {}
  Argument(Slice s) : v_(std::move(s)) {}
  Argument(EllipsisType e) : v_(e) {}
  Argument(c10::ScalarType t) : v_(t) {}
  Argument(c10::Device d) : v_(d) {}
  Argument(c10::Layout l) : v_(l) {}
  Argument(c10::MemoryFormat m) : v_(m) {}
  Argument(Opaque o) : v_(std::move(o)) {}

  template <class T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  bool is_none() const { return is<NoneType>(); }
  bool is_node() const { return is<Node*>(); }
  // The node this argument is, or nullptr.
  Node* node() const { return is_node() ? std::get<Node*>(v_) : nullptr; }

  // The value as T; throws fx::Error naming both kinds when it is not a T.
  template <class T>
  const T& get() const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw_wrong_kind(kind_name_of<T>());
  }

  const Storage& storage() const { return v_; }
  // The Python kind: "NoneType", "bool", "int", "float", "str", "Node", "tuple", ...
  std::string_view kind_name() const;

  bool operator==(const Argument& o) const { return v_ == o.v_; }

 private:
  template <class T, class... Ts>
  static constexpr size_t index_in(std::variant<Ts...>*) {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }
  template <class T>
  static std::string_view kind_name_of() {
    return kind_name_at(index_in<T>(static_cast<Storage*>(nullptr)));
  }
  static std::string_view kind_name_at(size_t index);
  [[noreturn]] void throw_wrong_kind(std::string_view wanted) const;

  Storage v_;
};

// A node's positional arguments (FX: a tuple) and keyword arguments (FX: an
// ordered dict).
using Args = std::vector<Argument>;
using Kwargs = std::vector<std::pair<std::string, Argument>>;

inline Tuple tuple(std::vector<Argument> items) { return Tuple{std::move(items)}; }
inline List list(std::vector<Argument> items) { return List{std::move(items)}; }
inline Dict dict(std::vector<std::pair<std::string, Argument>> items) { return Dict{std::move(items)}; }
inline Slice slice(Argument start, Argument stop, Argument step = None) {
  return Slice{{std::move(start), std::move(stop), std::move(step)}};
}

// Calls fn(Node*) for every node inside `a`, depth first, in order (FX's map_arg
// visiting order: tuple/list items, dict values, slice start/stop/step).
void for_each_node(const Argument& a, const std::function<void(Node*)>& fn);
// Rebuilds `a` with every node n replaced by fn(n) (FX's map_arg).
Argument map_arg(const Argument& a, const std::function<Argument(Node*)>& fn);

}  // namespace fx
