#include <fx/pytree.h>

#include <string>

namespace fx {

namespace {
void flatten_into(const Value& v, std::vector<Value>& leaves, TreeSpec& spec) {
  if (v.is_dict())
    throw TraceError(
        "a dict inside a structured input or output (concrete_args with structures) is not supported: "
        "fx::TreeSpec holds lists and tuples. Return the dict from a module traced without structured "
        "concrete_args, or pass a list or tuple");
  if (!v.is_list() && !v.is_tuple()) {
    spec = TreeSpec::leaf();
    leaves.push_back(v);
    return;
  }
  spec.kind = v.is_list() ? TreeSpec::Kind::list : TreeSpec::Kind::tuple;
  std::vector<Value> items = v.items();
  spec.children.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) flatten_into(items[i], leaves, spec.children[i]);
}

Value unflatten_from(const std::vector<Value>& leaves, size_t& next, const TreeSpec& spec) {
  if (spec.is_leaf()) return leaves[next++];
  std::vector<Value> items;
  items.reserve(spec.children.size());
  for (const auto& child : spec.children) items.push_back(unflatten_from(leaves, next, child));
  return spec.kind == TreeSpec::Kind::list ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}
}  // namespace

std::pair<std::vector<Value>, TreeSpec> tree_flatten(const Value& tree) {
  std::pair<std::vector<Value>, TreeSpec> out;
  flatten_into(tree, out.first, out.second);
  return out;
}

Value tree_unflatten(const std::vector<Value>& leaves, const TreeSpec& spec) {
  if (leaves.size() != spec.num_leaves())
    throw Error("tree_unflatten: the structure holds " + std::to_string(spec.num_leaves()) +
                " value(s) but " + std::to_string(leaves.size()) + " were given");
  size_t next = 0;
  return unflatten_from(leaves, next, spec);
}

}  // namespace fx
