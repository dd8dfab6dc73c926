#include "module_paths.h"

#include <limits>

#include <fx/error.h>

#include "module_dicts.h"

namespace fx::detail {

ModulePaths::ModulePaths(const torch::nn::Module& root) {
  // At least the root and its children: a flat model (a long Sequential)
  // then fills the tables without growing them.
  const size_t at_least = children_of(root).size() + 1;
  index_.reserve(at_least);
  entries_.reserve(at_least);
  pool_.reserve(4 * at_least);
  std::string path;
  add(&root, 0);
  walk(root, path);
}

bool ModulePaths::add(const torch::nn::Module* m, size_t start) {
  if (entries_.size() >= std::numeric_limits<uint32_t>::max())
    throw Error("a module tree of more than 2^32 modules cannot be traced; trace its parts one by one");
  if (!index_.insert(m, static_cast<uint32_t>(entries_.size()))) return false;
  entries_.push_back(Entry{m, start, pool_.size() - start});
  return true;
}

// `path` is m's own path; each child's is appended to it and cut off again,
// so walking allocates nothing per module.
void ModulePaths::walk(const torch::nn::Module& m, std::string& path) {
  const size_t own = path.size();
  const auto& children = children_of(m).items();
  for (size_t i = 0; i < children.size(); ++i) {
    const auto& child = children[i];
    // Each child's own dict is a cache miss in a large model: ask for a later one's ahead.
    if (i + 4 < children.size() && children[i + 4].value())
      __builtin_prefetch(&children_of(*children[i + 4].value()).items());
    if (!child.value()) continue;
    if (own != 0) path += '.';
    path += child.key();
    const size_t start = pool_.size();
    pool_ += path;
    if (add(child.value().get(), start))
      walk(*child.value(), path);
    else
      pool_.resize(start);  // reached before: keeps its first path
    path.resize(own);
  }
}

}  // namespace fx::detail
