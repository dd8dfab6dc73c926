#pragma once
// One level of a pytree rebuilt: the container a TreeSpec node names (list,
// tuple, or dict with the spec's keys in order) around its items. Shared by
// tree_unflatten and the tracer's structured concrete_args.

#include <fx/pytree.h>
#include <fx/value.h>

#include <vector>

namespace fx::detail {

// `spec` is not a leaf; `items` holds one value per child.
Value container_of(const TreeSpec& spec, std::vector<Value> items);

}  // namespace fx::detail
