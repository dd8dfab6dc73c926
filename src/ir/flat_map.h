#pragma once
// An open-addressing hash map for the IR's hot tables (interned targets,
// name suffixes): entries live in one array, probed linearly, so a lookup touches
// one or two cache lines and an insert allocates nothing until the table
// grows. std::unordered_map allocates a node per entry and chases a pointer
// per lookup, which was most of what naming a node cost.
//
// Only what those tables need: insert and find, no erase. Pointers to
// values are invalidated when the table grows (an insert).
//
// Every slot holds a Key, so memory follows the capacity: the name tables,
// which hold up to one entry per node, use the 8-byte slots of index_set.h.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "probe_table.h"

namespace fx::detail {

// std::hash over std::string_view, for std::string and std::string_view
// keys looked up by either.
struct StringViewHash {
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class Key, class Value>
struct FlatMapSlot {
  uint64_t hash = 0;  // 0: empty (FlatMap's tag() never returns 0)
  Key key{};
  [[no_unique_address]] Value value{};  // a set's empty Value takes no room
  bool empty() const { return hash == 0; }
  uint64_t place() const { return hash; }
};

// `Hash` must be transparent over the lookup types (a std::string key is
// found by std::string_view): hash(q) equal for equal keys, `key == q` defined.
template <class Key, class Value, class Hash>
class FlatMap : public ProbeTable<FlatMapSlot<Key, Value>> {
  using Base = ProbeTable<FlatMapSlot<Key, Value>>;
  using Base::home, Base::next, Base::slots_, Base::size_;

 public:
  template <class Q>
  Value* find(const Q& q) {
    if (size_ == 0) return nullptr;
    const uint64_t h = tag(q);
    for (size_t i = home(h);; i = next(i)) {
      auto& s = slots_[i];
      if (s.empty()) return nullptr;
      if (s.hash == h && s.key == q) return &s.value;
    }
  }
  template <class Q>
  const Value* find(const Q& q) const {
    return const_cast<FlatMap*>(this)->find(q);
  }

  // The value under q, made from Key(q) and Value() if absent; true when made.
  template <class Q>
  std::pair<Value*, bool> try_emplace(const Q& q) {
    this->make_room();
    const uint64_t h = tag(q);
    size_t i = home(h);
    for (;; i = next(i)) {
      auto& s = slots_[i];
      if (s.empty()) break;
      if (s.hash == h && s.key == q) return {&s.value, false};
    }
    auto& s = slots_[i];
    s.hash = h;
    s.key = Key(q);
    ++size_;
    return {&s.value, true};
  }

 private:
  template <class Q>
  static uint64_t tag(const Q& q) {
    return static_cast<uint64_t>(Hash{}(q)) | 1;
  }
};

}  // namespace fx::detail
