#pragma once
// Flattening nested lists/tuples of fx::Values into leaves and back, as
// torch.utils._pytree's tree_flatten / tree_unflatten do (lists and tuples
// are nodes; everything else, None included, is a leaf).

#include <fx/tree_spec.h>
#include <fx/value.h>

#include <utility>
#include <vector>

namespace fx {

std::pair<std::vector<Value>, TreeSpec> tree_flatten(const Value& tree);
// Rebuilds the structure of `spec` from its leaves in order. Throws fx::Error
// when the number of leaves differs from spec.num_leaves().
Value tree_unflatten(const std::vector<Value>& leaves, const TreeSpec& spec);

}  // namespace fx
