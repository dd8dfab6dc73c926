#pragma once
// fx::Meta: a node's metadata, the typed key/value store that passes use
// (FX's `node.meta` dict): `stack_trace`, `tensor_meta`, `val`, ...
// Keys keep their insertion order, as in a Python dict.

#include <any>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx {

class Meta {
 public:
  template <class T>
  void set(std::string_view key, T value) {
    for (auto& [k, v] : items_)
      if (k == key) {
        v = std::move(value);
        return;
      }
    items_.emplace_back(std::string(key), std::any(std::move(value)));
  }

  // The value under `key` if there is one and it holds a T; nullptr otherwise.
  template <class T>
  const T* get(std::string_view key) const {
    const std::any* a = find(key);
    return a ? std::any_cast<T>(a) : nullptr;
  }
  template <class T>
  T* get(std::string_view key) {
    std::any* a = const_cast<std::any*>(find(key));
    return a ? std::any_cast<T>(a) : nullptr;
  }

  bool contains(std::string_view key) const { return find(key) != nullptr; }
  bool erase(std::string_view key) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) {
        items_.erase(it);
        return true;
      }
    return false;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  const std::any* find(std::string_view key) const {
    for (auto& [k, v] : items_)
      if (k == key) return &v;
    return nullptr;
  }
  std::vector<std::pair<std::string, std::any>> items_;
};

}  // namespace fx
