#pragma once
// torch.fx's Tracer.submodule_paths, {mod: name for name, mod in
// root.named_modules()}: every module under a root, by identity, with its
// dotted path (the first one, for a module registered twice).
//
// A trace builds it once and asks it once per module call. The paths lie back
// to back in one buffer and the table holds indices (PointerIndexMap), so
// building it allocates a few growing arrays instead of a string and a hash
// node per module: for a 20,000-module model that was a quarter of the trace.

#include <torch/nn/module.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../ir/index_set.h"

namespace fx::detail {

class ModulePaths {
 public:
  // root's path is "". Descends as named_modules() does: pre-order, children
  // in registration order, a module reached again neither renamed nor
  // walked a second time.
  explicit ModulePaths(const torch::nn::Module& root);

  size_t size() const { return entries_.size(); }

  std::optional<std::string_view> find(const torch::nn::Module* m) const {
    auto i = index_.find(m);
    if (!i) return std::nullopt;
    return path_of(entries_[*i]);
  }

  // visit(path, module) for every module, in named_modules() order.
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const Entry& e : entries_) visit(path_of(e), *e.module);
  }

 private:
  struct Entry {
    const torch::nn::Module* module;
    size_t offset, size;
  };
  std::string_view path_of(const Entry& e) const { return {pool_.data() + e.offset, e.size}; }
  // Records `path` (the pool's tail from `start`) for m; false if m has one.
  bool add(const torch::nn::Module* m, size_t start);
  void walk(const torch::nn::Module& m, std::string& path);

  std::string pool_;
  std::vector<Entry> entries_;
  PointerIndexMap index_;
};

}  // namespace fx::detail
