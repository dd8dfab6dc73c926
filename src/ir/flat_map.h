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
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "probe_table.h"

namespace fx::detail {

// A hash of a name. Most names a graph holds are short (`add_17`,
// `conv1`): up to 16 bytes are read as two overlapping words folded by one
// 128-bit multiply, where std::hash's byte loop was a tenth of naming a
// node. Longer keys go to std::hash. (An 8-byte word equal to a multiplier
// constant would zero the product; those constants' bytes are not
// identifier characters, so no name is such a word.)
inline uint64_t hash_name(std::string_view s) noexcept {
  const size_t n = s.size();
  if (n > 16) return std::hash<std::string_view>{}(s);
  const char* p = s.data();
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
  } else if (n >= 4) {
    uint32_t lo = 0, hi = 0;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    a = lo;
    b = hi;
  } else if (n > 0) {
    a = uint64_t{static_cast<unsigned char>(p[0])} << 16 |
        uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 | static_cast<unsigned char>(p[n - 1]);
  }
  __extension__ typedef unsigned __int128 Wide;  // g++ and clang++ both have it
  const Wide m = static_cast<Wide>(a ^ 0xa0761d6478bd642full) * (b ^ 0xe7037ed1a0b428dbull ^ n);
  return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
}

// hash_name, for std::string and std::string_view keys looked up by either.
struct StringViewHash {
  size_t operator()(std::string_view s) const noexcept { return hash_name(s); }
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
