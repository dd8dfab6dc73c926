// torch.utils._pytree's serialized TreeSpec (tree_spec_json.h).
#include "tree_spec_json.h"

#include <fx/error.h>

#include <ATen/core/Dict.h>

#include <nlohmann/json.hpp>

namespace fx::detail {

namespace {

using SpecJson = nlohmann::json;

[[noreturn]] void spec_error(const std::string& where, const std::string& what) {
  throw LoadError(where + ": " + what);
}

TreeSpec node_of(const SpecJson& j, const std::string& where, int depth) {
  // Deeper structures than this are no function's arguments; the limit keeps
  // a malformed file from recursing without end.
  if (depth > 256) spec_error(where, "nested deeper than 256 levels");
  if (!j.is_object()) spec_error(where, "expected a TreeSpec object");
  auto type = j.find("type");
  auto children = j.find("children_spec");
  if (type == j.end() || children == j.end() || !children->is_array())
    spec_error(where, "expected \"type\" and \"children_spec\"");
  TreeSpec s;
  if (type->is_null()) {
    if (!children->empty()) spec_error(where, "a leaf with children");
    return s;
  }
  if (!type->is_string()) spec_error(where + ".type", "expected a string or null");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "builtins.tuple") {
    s.kind = TreeSpec::Kind::tuple;
  } else if (t == "builtins.list") {
    s.kind = TreeSpec::Kind::list;
  } else if (t == "builtins.dict" || t == "collections.OrderedDict") {
    s.kind = TreeSpec::Kind::dict;
    auto context = j.find("context");
    if (context == j.end() || !context->is_string())
      spec_error(where + ".context", "expected the dict's keys as JSON text");
    SpecJson keys = SpecJson::parse(context->get_ref<const std::string&>(), nullptr, false);
    if (!keys.is_array()) spec_error(where + ".context", "expected a JSON list of keys");
    for (const SpecJson& k : keys) s.keys.push_back(k.is_string() ? k.get<std::string>() : k.dump());
  } else {
    spec_error(where + ".type",
               "'" + t + "' values are not supported (fxcpp rebuilds tuples, lists and dicts)");
  }
  for (size_t i = 0; i < children->size(); ++i)
    s.children.push_back(
        node_of((*children)[i], where + ".children_spec[" + std::to_string(i) + "]", depth + 1));
  if (s.kind == TreeSpec::Kind::dict && s.keys.size() != s.children.size())
    spec_error(where, std::to_string(s.keys.size()) + " keys for " + std::to_string(s.children.size()) +
                          " children");
  return s;
}

void flatten(const TreeSpec& s, const c10::IValue& v, const std::string& where,
             std::vector<c10::IValue>& flat) {
  switch (s.kind) {
    case TreeSpec::Kind::leaf:
      flat.push_back(v);
      return;
    case TreeSpec::Kind::tuple:
    case TreeSpec::Kind::list: {
      std::vector<c10::IValue> items;
      if (v.isTuple())
        items = v.toTupleRef().elements().vec();
      else if (v.isList())
        items = v.toListRef().vec();
      else if (v.isTensorList())
        for (const auto& t : v.toTensorVector()) items.emplace_back(t);
      else
        throw Error("ExportedProgram.run: " + where + " must be a tuple or list of " +
                    std::to_string(s.children.size()) + ", got " + v.tagKind());
      if (items.size() != s.children.size())
        throw Error("ExportedProgram.run: " + where + " must hold " + std::to_string(s.children.size()) +
                    " items, got " + std::to_string(items.size()));
      for (size_t i = 0; i < items.size(); ++i)
        flatten(s.children[i], items[i], where + "[" + std::to_string(i) + "]", flat);
      return;
    }
    case TreeSpec::Kind::dict: {
      if (!v.isGenericDict())
        throw Error("ExportedProgram.run: " + where + " must be a dict, got " + v.tagKind());
      const auto d = v.toGenericDict();
      for (size_t i = 0; i < s.keys.size(); ++i) {
        auto it = d.find(c10::IValue(s.keys[i]));
        if (it == d.end()) throw Error("ExportedProgram.run: " + where + " has no key '" + s.keys[i] + "'");
        flatten(s.children[i], it->value(), where + "['" + s.keys[i] + "']", flat);
      }
      return;
    }
  }
}

c10::IValue rebuild(const TreeSpec& s, const std::vector<c10::IValue>& leaves, size_t& next) {
  switch (s.kind) {
    case TreeSpec::Kind::leaf:
      if (next >= leaves.size())
        throw Error("ExportedProgram.run: the program returned fewer values than its out_spec holds");
      return leaves[next++];
    case TreeSpec::Kind::tuple: {
      std::vector<c10::IValue> items;
      for (const auto& c : s.children) items.push_back(rebuild(c, leaves, next));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    case TreeSpec::Kind::list: {
      c10::impl::GenericList list(c10::AnyType::get());
      for (const auto& c : s.children) list.push_back(rebuild(c, leaves, next));
      return list;
    }
    case TreeSpec::Kind::dict: {
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < s.children.size(); ++i)
        dict.insert(s.keys[i], rebuild(s.children[i], leaves, next));
      return dict;
    }
  }
  return {};
}

}  // namespace

TreeSpec parse_tree_spec(const std::string& text, const std::string& where) {
  if (text.empty()) return {};
  SpecJson j = SpecJson::parse(text, nullptr, false);
  if (j.is_discarded()) spec_error(where, "not JSON text");
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer())
    spec_error(where, "expected [protocol, TreeSpec]");
  if (j[0].get<int64_t>() != 1)
    spec_error(where, "pytree protocol " + j[0].dump() + " (fxcpp reads protocol 1)");
  return node_of(j[1], where, 0);
}

void flatten_inputs(const TreeSpec& in_spec, const std::vector<c10::IValue>& inputs,
                    std::vector<c10::IValue>& flat) {
  if (in_spec.kind != TreeSpec::Kind::tuple || in_spec.children.size() != 2 ||
      in_spec.children[0].kind != TreeSpec::Kind::tuple) {
    // No (args, kwargs) structure recorded: the inputs are the flat values.
    flat = inputs;
    return;
  }
  const TreeSpec& args = in_spec.children[0];
  const TreeSpec& kwargs = in_spec.children[1];
  const size_t num_kwargs = kwargs.children.size();
  if (inputs.size() != args.children.size() + num_kwargs)
    throw Error(
        "ExportedProgram.run: the program takes " + std::to_string(args.children.size()) +
        " positional argument(s)" +
        (num_kwargs ? " and " + std::to_string(num_kwargs) + " keyword argument value(s)" : std::string()) +
        ", got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < args.children.size(); ++i)
    flatten(args.children[i], inputs[i], "args[" + std::to_string(i) + "]", flat);
  for (size_t i = 0; i < num_kwargs; ++i)
    flatten(kwargs.children[i], inputs[args.children.size() + i],
            "kwargs['" + (i < kwargs.keys.size() ? kwargs.keys[i] : std::string()) + "']", flat);
}

c10::IValue unflatten_outputs(const TreeSpec& out_spec, const std::vector<c10::IValue>& leaves) {
  size_t next = 0;
  c10::IValue out = rebuild(out_spec, leaves, next);
  if (next != leaves.size())
    throw Error("ExportedProgram.run: the program returned " + std::to_string(leaves.size()) +
                " values, its out_spec holds " + std::to_string(next));
  return out;
}

}  // namespace fx::detail
