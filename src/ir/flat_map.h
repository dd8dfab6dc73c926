#pragma once
// An open-addressing hash map for the IR's hot tables (node names, interned
// targets): entries live in one array, probed linearly, so a lookup touches
// one or two cache lines and an insert allocates nothing until the table
// grows. std::unordered_map allocates a node per entry and chases a pointer
// per lookup, which was most of what naming a node cost.
//
// Only what those tables need: insert and find, no erase. Pointers to
// values are invalidated when the table grows (an insert).
//
// Every slot holds a Key, so memory follows the capacity. Measured on
// this machine (docs/benchmarks.md): python_code reserving its table up
// front makes symbolic_trace of the 10k-layer MLP faster (~69 ms against
// ~117 ms) and cse at 100k nodes slower (~389 ms against ~299 ms); a
// layout with 8-byte probe slots and a separate entry array was slower on
// tracing.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::detail {

// std::hash over std::string_view, for std::string and std::string_view
// keys looked up by either.
struct StringViewHash {
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// `Hash` must be transparent over the lookup types (a std::string key is
// found by std::string_view): hash(q) equal for equal keys, `key == q` defined.
template <class Key, class Value, class Hash>
class FlatMap {
 public:
  size_t size() const { return size_; }

  template <class Q>
  Value* find(const Q& q) {
    if (size_ == 0) return nullptr;
    const uint64_t h = tag(q);
    for (size_t i = home(h);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.hash == 0) return nullptr;
      if (s.hash == h && s.key == q) return &s.value;
    }
  }
  template <class Q>
  const Value* find(const Q& q) const {
    return const_cast<FlatMap*>(this)->find(q);
  }

  // Room for n entries without growing.
  void reserve(size_t n) {
    while (2 * n > slots_.size()) grow();
  }

  // The value under q, made from Key(q) and Value() if absent; true when made.
  template <class Q>
  std::pair<Value*, bool> try_emplace(const Q& q) {
    if (2 * (size_ + 1) > slots_.size()) grow();  // load factor at most 1/2
    const uint64_t h = tag(q);
    size_t i = home(h);
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.hash == 0) break;
      if (s.hash == h && s.key == q) return {&s.value, false};
    }
    Slot& s = slots_[i];
    s.hash = h;
    s.key = Key(q);
    ++size_;
    return {&s.value, true};
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty (tag() never returns 0)
    Key key{};
    [[no_unique_address]] Value value{};  // a set's empty Value takes no room
  };

  template <class Q>
  static uint64_t tag(const Q& q) {
    return static_cast<uint64_t>(Hash{}(q)) | 1;
  }
  // Fibonacci hashing: the top bits of hash * 2^64/phi, so that identity
  // hashes (pointers) spread over a power-of-two table.
  size_t home(uint64_t h) const { return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> shift_); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 16 : 2 * old.size();
    slots_ = std::vector<Slot>(capacity);
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    for (Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = home(s.hash);
      while (slots_[i].hash != 0) i = (i + 1) & mask_;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace fx::detail
