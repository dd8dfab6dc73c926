#pragma once
// fx::TreeSpec: the shape of a nested structure of lists, tuples and dicts
// (str keys, in order), as torch.utils._pytree's TreeSpec describes it; and PyTreeInfo, what torch.fx's
// _PyTreeCodeGen keeps on a graph traced with structured concrete_args.
//
// A graph traced with `concrete_args={"d": fx::ConcreteArg::list({fx::PH, fx::PH})}`
// takes flat inputs (placeholders d_1, d_2) while its module is called with
// the original structure (d = [a, b]); in_spec says how to flatten the call's
// arguments, out_spec how to rebuild the output from the flat list the graph
// returns. The generated code says the same in Python:
//
//   def forward(self, x, d):
//       self, x, d_1, d_2, = fx_pytree.tree_flatten_spec([self, x, d], self._in_spec)
//       ...
//       return pytree.tree_unflatten([add], self._out_spec)

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fx {

struct TreeSpec {
  enum class Kind { leaf, list, tuple, dict };
  Kind kind = Kind::leaf;
  std::vector<std::string> keys;   // a dict's (pytree's context), one per child
  std::vector<TreeSpec> children;  // empty for a leaf

  static TreeSpec leaf() { return {}; }
  bool is_leaf() const { return kind == Kind::leaf; }
  // How many leaves the structure holds.
  size_t num_leaves() const {
    if (is_leaf()) return 1;
    size_t n = 0;
    for (const auto& c : children) n += c.num_leaves();
    return n;
  }
  bool operator==(const TreeSpec&) const = default;
};

struct PyTreeInfo {
  // The traced function's parameter names, `self` first for a module.
  std::vector<std::string> orig_args;
  // The structure of the arguments after self, as a tuple.
  TreeSpec in_spec;
  // The structure of the output; set when tracing finishes.
  std::optional<TreeSpec> out_spec;
};

}  // namespace fx
