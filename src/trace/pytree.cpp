#include <fx/pytree.h>
#include <fx/runtime.h>

#include <algorithm>
#include <string>

#include "tree_node.h"

namespace fx {

Value detail::container_of(const TreeSpec& spec, std::vector<Value> items) {
  switch (spec.kind) {
    case TreeSpec::Kind::list:
      return Value::list(std::move(items));
    case TreeSpec::Kind::dict: {
      std::vector<std::pair<std::string, Value>> entries;
      entries.reserve(items.size());
      for (size_t i = 0; i < items.size(); ++i) entries.emplace_back(spec.keys[i], std::move(items[i]));
      return Value::dict(std::move(entries));
    }
    default:
      return Value::tuple(std::move(items));
  }
}

namespace {
void flatten_into(const Value& v, std::vector<Value>& leaves, TreeSpec& spec) {
  if (!v.is_list() && !v.is_tuple() && !v.is_dict()) {
    spec = TreeSpec::leaf();
    leaves.push_back(v);
    return;
  }
  spec.kind = v.is_list()    ? TreeSpec::Kind::list
              : v.is_tuple() ? TreeSpec::Kind::tuple
                             : TreeSpec::Kind::dict;
  if (v.is_dict()) spec.keys = v.keys();  // pytree's dict context: the keys in order
  std::vector<Value> items = v.items();
  spec.children.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) flatten_into(items[i], leaves, spec.children[i]);
}

Value unflatten_from(const std::vector<Value>& leaves, size_t& next, const TreeSpec& spec) {
  if (spec.is_leaf()) return leaves[next++];
  std::vector<Value> items;
  items.reserve(spec.children.size());
  for (const auto& child : spec.children) items.push_back(unflatten_from(leaves, next, child));
  return detail::container_of(spec, std::move(items));
}
// fx._pytree.tree_flatten_spec: each child taken from `v` as the spec says,
// a list's or tuple's by index and a dict's by key, so that a dict with the
// same keys in another order, or with more keys, flattens as Python's does.
void flatten_spec_into(const Value& v, const TreeSpec& spec, const std::string& where,
                       std::vector<Value>& leaves) {
  if (spec.is_leaf()) {
    leaves.push_back(v);
    return;
  }
  const bool is_dict = spec.kind == TreeSpec::Kind::dict;
  if (is_dict ? !v.is_dict() : !(v.is_list() || v.is_tuple()))
    throw Error(where + " must be a " + (is_dict ? "dict" : "list or tuple") +
                " (the structure the graph was "
                "traced with), got " +
                (v.has_proxy() ? std::string("a symbolic value") : python_type_name(v.ivalue())));
  const std::vector<Value> items = v.items();
  const std::vector<std::string> keys = is_dict ? v.keys() : std::vector<std::string>();
  for (size_t i = 0; i < spec.children.size(); ++i) {
    if (is_dict) {
      const auto k = std::find(keys.begin(), keys.end(), spec.keys[i]);
      if (k == keys.end()) throw Error(where + " has no key '" + spec.keys[i] + "' (KeyError)");
      flatten_spec_into(items[static_cast<size_t>(k - keys.begin())], spec.children[i],
                        where + "['" + spec.keys[i] + "']", leaves);
    } else {
      if (i >= items.size())
        throw Error(where + " holds " + std::to_string(items.size()) + " item(s) where the graph reads " +
                    std::to_string(spec.children.size()) + " (IndexError)");
      flatten_spec_into(items[i], spec.children[i], where + "[" + std::to_string(i) + "]", leaves);
    }
  }
}

}  // namespace

std::vector<Value> tree_flatten_spec(const Value& tree, const TreeSpec& spec, const std::string& name) {
  std::vector<Value> leaves;
  leaves.reserve(spec.num_leaves());
  flatten_spec_into(tree, spec, name, leaves);
  return leaves;
}

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
