#pragma once
// Flattening nested lists, tuples and dicts of fx::Values into leaves and
// back, as torch.utils._pytree's tree_flatten / tree_unflatten do (lists,
// tuples and dicts are nodes, a dict's values in key order; everything else,
// None included, is a leaf).

#include <fx/tree_spec.h>
#include <fx/value.h>

#include <string>
#include <utility>
#include <vector>

namespace fx {

std::pair<std::vector<Value>, TreeSpec> tree_flatten(const Value& tree);
// Rebuilds the structure of `spec` from its leaves in order. Throws fx::Error
// when the number of leaves differs from spec.num_leaves().
Value tree_unflatten(const std::vector<Value>& leaves, const TreeSpec& spec);
// torch.fx._pytree.tree_flatten_spec: the leaves of `tree` read as `spec`
// says, a list's or tuple's children by index and a dict's by key (a dict
// may hold its keys in another order, or more keys). Throws fx::Error naming
// the part of `name` (`d['boxes']`, `pair[1]`) that the spec cannot read.
std::vector<Value> tree_flatten_spec(const Value& tree, const TreeSpec& spec, const std::string& name);

}  // namespace fx
