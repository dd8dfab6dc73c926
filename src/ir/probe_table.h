#pragma once
// What the IR's open-addressing tables (FlatMap, IndexSet, PointerIndexMap)
// share: a power-of-two array of slots, probed linearly, at most half full,
// placed by Fibonacci hashing. A table derives from it and defines its Slot
// with `bool empty() const` and `uint64_t place() const` (the hash the slot
// was placed by).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fx::detail {

template <class Slot>
class ProbeTable {
 public:
  size_t size() const { return size_; }

  // Room for n entries without growing.
  void reserve(size_t n) {
    while (2 * n > slots_.size()) grow();
  }

 protected:
  // The top bits of h * 2^64/phi, so that identity hashes (pointers, whose
  // low bits are all alike) spread over the table.
  size_t home(uint64_t h) const { return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> shift_); }
  size_t next(size_t i) const { return (i + 1) & mask_; }
  // Room for one more entry.
  void make_room() {
    if (2 * (size_ + 1) > slots_.size()) grow();
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;

 private:
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 16 : 2 * old.size();
    slots_ = std::vector<Slot>(capacity);
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    for (Slot& s : old) {
      if (s.empty()) continue;
      size_t i = home(s.place());
      while (!slots_[i].empty()) i = next(i);
      slots_[i] = std::move(s);
    }
  }

  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace fx::detail
