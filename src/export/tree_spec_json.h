#pragma once
// torch.utils._pytree's serialized TreeSpec (treespec_dumps, protocol 1), as
// torch.export writes a program's in_spec and out_spec, and the flattening
// and rebuilding of IValues by it.

#include <fx/tree_spec.h>

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace fx::detail {

// Parses `[1, {"type": ..., "context": ..., "children_spec": [...]}]`; an
// empty text is one leaf. Throws fx::LoadError naming `where` for another
// protocol or a node type fxcpp cannot rebuild (a namedtuple, a dataclass).
TreeSpec parse_tree_spec(const std::string& text, const std::string& where);

// An in_spec is (args, kwargs): flattens the positional inputs by args and the
// values after them by kwargs, leaf by leaf into `flat`. Throws fx::Error
// naming the input whose structure differs.
void flatten_inputs(const TreeSpec& in_spec, const std::vector<c10::IValue>& inputs,
                    std::vector<c10::IValue>& flat);

// The out_spec's structure with `leaves` in order (tuple, list, dict with
// string keys, or the one value for a leaf).
c10::IValue unflatten_outputs(const TreeSpec& out_spec, const std::vector<c10::IValue>& leaves);

}  // namespace fx::detail
