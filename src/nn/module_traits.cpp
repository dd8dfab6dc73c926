// The registry of module traits, and the reading of a make_module call's
// arguments by kind. The records of fx::nn's classes are in the
// <family>_traits.cpp files beside this one.
#include <fx/error.h>
#include <fx/nn/module_traits.h>

#include "../ir/string_map.h"
#include "builtin_traits.h"

#include <deque>
#include <mutex>
#include <shared_mutex>

namespace fx::nn {

namespace {

// Records never move once registered: find_module_traits hands out pointers.
class TraitsRegistry {
 public:
  TraitsRegistry() {
    for (auto family : builtin_traits())
      for (auto& t : family()) add(std::move(t));
  }
  void add(ModuleTraits t) {
    std::unique_lock lock(mutex_);
    if (t.type.empty()) throw Error("register_module_traits: the record has no type name");
    if (!t.describe || !t.make)
      throw Error("register_module_traits: " + t.type + " needs both describe and make");
    if (by_type_.count(t.type)) throw Error("register_module_traits: " + t.type + " is registered already");
    records_.push_back(std::move(t));
    by_type_.emplace(records_.back().type, &records_.back());
  }
  const ModuleTraits* find(std::string_view type) const {
    std::shared_lock lock(mutex_);
    auto it = by_type_.find(type);
    return it == by_type_.end() ? nullptr : it->second;
  }
  std::vector<std::string> types() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    for (const auto& t : records_) out.push_back(t.type);
    return out;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::deque<ModuleTraits> records_;
  fx::detail::StringMap<const ModuleTraits*> by_type_;
};

TraitsRegistry& registry() {
  static TraitsRegistry* r = new TraitsRegistry();  // never destroyed: modules may outlive statics
  return *r;
}

// The items of a tuple or list argument, or nullptr for any other kind.
const std::vector<Argument>* spec_sequence_items(const Argument& a) {
  if (a.is<Tuple>()) return &a.get<Tuple>().items;
  if (a.is<List>()) return &a.get<List>().items;
  return nullptr;
}

}  // namespace

void register_module_traits(ModuleTraits traits) { registry().add(std::move(traits)); }

const ModuleTraits* find_module_traits(std::string_view type) { return registry().find(type); }

std::vector<std::string> module_traits_types() { return registry().types(); }

void spec_require_bias(const SpecArgs& a, const std::string& type, bool affine) {
  if (affine && !a.boolean("bias"))
    throw Error(type + ": bias=False is not supported by fxcpp's fx::nn (its " + type +
                " always has a bias when it has a weight)");
}

const Argument& SpecArgs::at(const std::string& name) const {
  for (const auto& [k, v] : bound_)
    if (k == name) return v;
  throw Error(type_ + ": no argument '" + name + "' (fxcpp's table of constructor parameters is wrong)");
}

void SpecArgs::wrong_kind(const std::string& name, const char* wanted, const Argument& got) const {
  throw Error(type_ + ": argument '" + name + "' must be " + wanted + ", got " +
              std::string(got.kind_name()));
}

int64_t SpecArgs::integer(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<int64_t>()) wrong_kind(name, "an int", a);
  return a.get<int64_t>();
}

double SpecArgs::real(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<double>()) return a.get<double>();
  if (a.is<int64_t>()) return static_cast<double>(a.get<int64_t>());
  wrong_kind(name, "a float", a);
}

bool SpecArgs::boolean(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<bool>()) wrong_kind(name, "a bool", a);
  return a.get<bool>();
}

std::string SpecArgs::str(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<std::string>()) wrong_kind(name, "a str", a);
  return a.get<std::string>();
}

std::optional<int64_t> SpecArgs::optional_integer(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<int64_t>()) wrong_kind(name, "an int or None", a);
  return a.get<int64_t>();
}

std::optional<double> SpecArgs::optional_real(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<double>() && !a.is<int64_t>()) wrong_kind(name, "a float or None", a);
  return real(name);
}

std::optional<bool> SpecArgs::optional_boolean(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<bool>()) wrong_kind(name, "a bool or None", a);
  return a.get<bool>();
}

std::vector<int64_t> SpecArgs::integers(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<int64_t>()) return {a.get<int64_t>()};
  const char* wanted = "an int or a tuple of ints";
  const auto* items = spec_sequence_items(a);
  if (!items) wrong_kind(name, wanted, a);
  std::vector<int64_t> out;
  for (const Argument& item : *items) {
    if (!item.is<int64_t>()) wrong_kind(name, wanted, item);
    out.push_back(item.get<int64_t>());
  }
  return out;
}

std::vector<int64_t> SpecArgs::integers_or_none(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return {};
  if (!a.is<int64_t>() && !spec_sequence_items(a)) wrong_kind(name, "None, an int or a tuple of ints", a);
  return integers(name);
}

std::vector<double> SpecArgs::reals_or_none(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return {};
  const char* wanted = "None, a float or a tuple of floats";
  auto as_real = [&](const Argument& x) {
    if (x.is<double>()) return x.get<double>();
    if (x.is<int64_t>()) return static_cast<double>(x.get<int64_t>());
    wrong_kind(name, wanted, x);
  };
  const auto* items = spec_sequence_items(a);
  if (!items) return {as_real(a)};
  std::vector<double> out;
  for (const Argument& item : *items) out.push_back(as_real(item));
  return out;
}

PoolArg SpecArgs::pool(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<int64_t>()) return PoolArg(a.get<int64_t>());
  const char* wanted = "an int or a tuple of ints";
  const auto* items = spec_sequence_items(a);
  if (!items) wrong_kind(name, wanted, a);
  std::vector<std::optional<int64_t>> out;
  for (const Argument& item : *items) {
    if (item.is_none())
      out.emplace_back(std::nullopt);
    else if (item.is<int64_t>())
      out.emplace_back(item.get<int64_t>());
    else
      wrong_kind(name, wanted, item);
  }
  return PoolArg(std::move(out));
}

std::optional<PoolArg> SpecArgs::optional_pool(const std::string& name) const {
  if (at(name).is_none()) return std::nullopt;
  return pool(name);
}

}  // namespace fx::nn
