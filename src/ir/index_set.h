#pragma once
// Small-slot hash tables of 32-bit indices, for the name tables.
//
// IndexSet: a hash set of strings that live elsewhere, held by index: a slot is 8
// bytes (a 32-bit tag of the string's hash and the string's index), and
// `key_of(i)` gives the i-th string back when a tag matches. For 100k names
// the table is 2 MB, where a FlatMap<std::string> is 10 MB; in this VM every
// fresh page costs ~12 us, so the size of the table is most of its cost.
//
// PointerIndexMap: an object's address -> an index, 16 bytes a slot.
//
// Only what the name tables need: find and insert, no erase.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "flat_map.h"
#include "probe_table.h"

namespace fx::detail {

struct IndexSetSlot {
  uint32_t tag = 0;  // 0: empty (IndexSet's tag() never returns 0)
  uint32_t index = 0;
  bool empty() const { return tag == 0; }
  uint64_t place() const { return tag; }  // placed by the tag alone: growing reads no key
};

class IndexSet : public ProbeTable<IndexSetSlot> {
 public:
  // The index stored for `key`; `key_of(i)` is the string of index i.
  template <class KeyOf>
  std::optional<uint32_t> find(std::string_view key, const KeyOf& key_of) const {
    if (size_ == 0) return std::nullopt;
    const uint32_t t = tag(key);
    for (size_t i = home(t);; i = next(i)) {
      const auto& s = slots_[i];
      if (s.empty()) return std::nullopt;
      if (s.tag == t && key_of(s.index) == key) return s.index;
    }
  }

  // Stores `index` for `key` unless `key` is there: returns the stored
  // index and whether it is `index`. key_of(index) need not be valid yet.
  template <class KeyOf>
  std::pair<uint32_t, bool> insert(std::string_view key, uint32_t index, const KeyOf& key_of) {
    make_room();
    const uint32_t t = tag(key);
    size_t i = home(t);
    for (;; i = next(i)) {
      const auto& s = slots_[i];
      if (s.empty()) break;
      if (s.tag == t && key_of(s.index) == key) return {s.index, false};
    }
    slots_[i] = IndexSetSlot{t, index};
    ++size_;
    return {index, true};
  }

 private:
  static uint32_t tag(std::string_view key) {
    const uint64_t h = hash_name(key);
    return static_cast<uint32_t>(h ^ (h >> 32)) | 1;
  }
};

struct PointerIndexSlot {
  const void* key = nullptr;  // nullptr: empty
  uint32_t index = 0;
  bool empty() const { return key == nullptr; }
  uint64_t place() const { return reinterpret_cast<uintptr_t>(key); }
};

class PointerIndexMap : public ProbeTable<PointerIndexSlot> {
 public:
  std::optional<uint32_t> find(const void* key) const {
    if (size_ == 0) return std::nullopt;
    for (size_t i = home(reinterpret_cast<uintptr_t>(key));; i = next(i)) {
      const auto& s = slots_[i];
      if (s.key == key) return s.index;
      if (s.empty()) return std::nullopt;
    }
  }

  // Stores `index` for `key` (not null) unless `key` has one: whether it stored it.
  bool insert(const void* key, uint32_t index) {
    make_room();
    size_t i = home(reinterpret_cast<uintptr_t>(key));
    for (; !slots_[i].empty(); i = next(i))
      if (slots_[i].key == key) return false;
    slots_[i] = PointerIndexSlot{key, index};
    ++size_;
    return true;
  }

  // Sets the index of `key` (not null).
  void set(const void* key, uint32_t index) {
    make_room();
    size_t i = home(reinterpret_cast<uintptr_t>(key));
    while (!slots_[i].empty() && slots_[i].key != key) i = next(i);
    if (slots_[i].empty()) ++size_;
    slots_[i] = PointerIndexSlot{key, index};
  }
};

}  // namespace fx::detail
