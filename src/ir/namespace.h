#pragma once
// torch.fx's _Namespace: unique, legal Python names, one per object.
//
// The rules are torch.fx 2.x's: a legal name is kept as it is; otherwise it
// is sanitized, split into a base and a `_N` suffix, and counted up from the
// base's remembered count until it is free and shadows no keyword or builtin.
// Naming n nodes `add` is O(n), as in FX.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "flat_map.h"
#include "index_set.h"

namespace fx::detail {

class Namespace {
 public:
  // Registers torch.fx's custom builtins (inf, nan, NoneType, torch, device,
  // fx_pytree, pytree) as taken, as FX's codegen does before naming anything.
  void add_custom_builtins();

  // A unique name built from `candidate`, associated with `obj` (when not
  // null: asking again for the same obj returns the same name).
  std::string create_name(std::string_view candidate, const void* obj);

  // What create_name tries first for `raw`: sanitized (runs of characters
  // illegal in a name become `_`, `_unnamed` for nothing).
  // create_name(normal_form(raw), obj) == create_name(raw, obj).
  static std::string normal_form(std::string_view raw);
  // Whether a name in normal form is a legal name for no object (no keyword,
  // no builtin) without a `_N` suffix: then create_plain_name may skip those checks.
  static bool is_plain(std::string_view normal);
  // create_name(normal, nullptr) for a name that is_plain: graph nodes are
  // named from their target's hint, whose form is settled once per target.
  std::string create_plain_name(std::string_view normal);

  // Room for n names without growing (objects' names are rarer: graph nodes have none).
  void reserve(size_t n) {
    used_.reserve(n);
    entries_.reserve(n);
    pool_.reserve(12 * n);
  }

  // Takes `name` exactly; false if it is taken or not a legal name.
  bool claim(const std::string& name);
  // Takes `name` exactly, a builtin's name too (torch.fx's `node.name = x`;
  // code generation renames such a node); false if it is taken, a keyword
  // or not an identifier.
  bool claim_shadowing(const std::string& name);

  // Whether `obj` has a name here.
  bool has_object(const void* obj) const { return names_of_.find(obj).has_value(); }

  // Whether `name` was taken here.
  bool contains(std::string_view name) const;
  // keeps(name, obj) for a name known to be in normal form and legal for
  // any object: every name a graph gave its nodes itself.
  bool keeps_plain(std::string_view name) const { return !contains(name); }

  // Whether create_name(name, obj) would return `name` itself, for an obj
  // not named yet: `name` is already in normal form, legal for obj, and not
  // in this table. Names taken elsewhere are not asked: the caller knows.
  bool keeps(std::string_view name, const void* obj) const;

  // Names taken outside this table (asked only for names it does not hold):
  // a code namespace leaves the graph's own node names to the graph.
  void set_taken_elsewhere(std::function<bool(std::string_view)> taken) {
    taken_elsewhere_ = std::move(taken);
  }

  // The identity under which a Python builtin (`getattr`, `int`) is known.
  static const void* builtin_identity(std::string_view name);
  // The identity of one of FX's custom builtins (`NoneType`, `device`...), or nullptr.
  static const void* custom_builtin_identity(std::string_view name);

 private:
  bool used(std::string_view name) const;   // taken here or elsewhere
  bool claim_legal(std::string_view name);  // takes name unless taken, here or elsewhere
  std::string count_up(std::string candidate, std::string_view base, const void* obj);
  std::string count_up_big(std::string candidate, std::string_view base, const void* obj);
  void set_count(std::string_view base, uint64_t k);
  void set_big_count(std::string_view base, std::string_view digits);
  static bool is_illegal(std::string_view name, const void* obj);
  bool is_taken_elsewhere(std::string_view name) const { return taken_elsewhere_ && taken_elsewhere_(name); }

  // Marks `name` taken, stored as the last entry; false if it already was.
  // Throws when the pool is full.
  bool take(std::string_view name);
  std::string_view name_at(uint32_t i) const { return {pool_.data() + entries_[i].offset, entries_[i].size}; }
  auto key_of() const {
    return [this](uint32_t i) { return name_at(i); };
  }

  // Every taken name, back to back in one buffer: no allocation per name,
  // and the tables below hold 32-bit indices instead of strings.
  struct Entry {
    uint32_t offset, size;
  };
  // Bit n of first_and_length_[c] is set once a name of length n (31: 31
  // or more) starting with c (modulo 128) is taken. A code namespace holds
  // few names (globals, renamed nodes), and most lookups end here without
  // hashing the name.
  using LengthMasks = std::array<uint32_t, 128>;
  static bool in_masks(const LengthMasks& m, std::string_view name) {
    return m[static_cast<unsigned char>(name[0]) & 127] >> std::min<size_t>(name.size(), 31) & 1;
  }
  LengthMasks first_and_length_{};
  std::string pool_;
  std::vector<Entry> entries_;
  IndexSet used_;  // the taken names
  // FX's _base_count: base -> the suffix it was last given. kBigCount: the
  // count is beyond 64 bits, in big_counts_ as decimal digits. `taken` once
  // the base itself is known to be taken (names are never given back), so
  // that naming the next `add` of a graph does not ask for `add` again.
  static constexpr uint64_t kBigCount = UINT64_MAX;
  struct BaseCount {
    uint64_t count = 0;
    bool taken = false;
  };
  FlatMap<std::string, BaseCount, StringViewHash> base_count_;
  std::unordered_map<std::string, std::string> big_counts_;
  PointerIndexMap names_of_;  // obj -> its name's index
  std::function<bool(std::string_view)> taken_elsewhere_;
};

}  // namespace fx::detail
