// The print_tabular table with shape and dtype columns.
#include <fx/passes/print_tabular.h>
#include <fx/passes/shape_prop.h>

#include "../ir/repr.h"
#include "../ir/tabulate.h"

namespace fx::passes {

namespace {

std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// The tree with each tensor shown by `leaf` (its shape or dtype).
template <class Leaf>
std::string show(const TensorMetadataTree& t, const Leaf& leaf) {
  using Kind = TensorMetadataTree::Kind;
  if (t.kind == Kind::tensor) return leaf(t.tensor);
  if (t.kind == Kind::other) return t.other;
  std::string out = t.kind == Kind::tuple ? "(" : t.kind == Kind::list ? "[" : "{";
  for (size_t i = 0; i < t.items.size(); ++i) {
    if (i) out += ", ";
    if (t.kind == Kind::dict) out += t.keys[i] + ": ";
    out += show(t.items[i], leaf);
  }
  if (t.kind == Kind::tuple && t.items.size() == 1) out += ',';
  return out + (t.kind == Kind::tuple ? ")" : t.kind == Kind::list ? "]" : "}");
}

template <class Leaf>
std::string cell(const Node& n, const Leaf& leaf) {
  if (const auto* tm = n.meta().get<TensorMetadata>("tensor_meta")) return leaf(*tm);
  if (const auto* tree = n.meta().get<TensorMetadataTree>("tensor_meta")) return show(*tree, leaf);
  return "";
}

}  // namespace

std::string print_tabular(const Graph& graph) {
  auto shape = [](const TensorMetadata& m) { return shape_tuple(m.shape); };
  auto dtype = [](const TensorMetadata& m) { return fx::detail::repr_dtype(m.dtype); };
  std::vector<std::vector<std::string>> rows;
  rows.reserve(graph.size());
  for (Node* n : graph.nodes()) {
    Dict kwargs;
    for (const auto& kv : n->kwargs()) kwargs.items.push_back(kv);
    rows.push_back({std::string(op_name(n->op())), n->name(), n->target().str(),
                    fx::detail::repr(Tuple{n->args()}, fx::detail::plain_names()),
                    fx::detail::repr(kwargs, fx::detail::plain_names()), cell(*n, shape), cell(*n, dtype)});
  }
  return fx::detail::tabulate_simple({"opcode", "name", "target", "args", "kwargs", "shape", "dtype"}, rows);
}

}  // namespace fx::passes
