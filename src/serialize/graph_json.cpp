// A Graph <-> JSON (docs/format.md, "The graph").
#include "graph_json.h"

#include <fx/error.h>
#include <fx/passes/shape_prop.h>

#include <unordered_map>

#include "../ir/repr.h"

namespace fx::detail {

namespace {

using passes::TensorMetadata;
using passes::TensorMetadataTree;

const Json& field(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) load_error(where, std::string("missing \"") + key + "\"");
  return *it;
}

const std::string& string_field(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_string()) load_error(where + "." + key, "expected a string, got " + std::string(v.type_name()));
  return v.get_ref<const std::string&>();
}

bool bool_field(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_boolean())
    load_error(where + "." + key, "expected true or false, got " + std::string(v.type_name()));
  return v.get<bool>();
}

std::vector<int64_t> ints_field(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_array())
    load_error(where + "." + key, "expected an array of integers, got " + std::string(v.type_name()));
  std::vector<int64_t> out;
  for (const Json& x : v) {
    if (!x.is_number_integer()) load_error(where + "." + key, "expected an array of integers");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

std::vector<double> doubles_field(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_array())
    load_error(where + "." + key, "expected an array of numbers, got " + std::string(v.type_name()));
  std::vector<double> out;
  for (const Json& x : v) {
    if (!x.is_number()) load_error(where + "." + key, "expected an array of numbers");
    out.push_back(x.get<double>());
  }
  return out;
}

// ---- tensor_meta -----------------------------------------------------------

Json qscheme_name(c10::QScheme q) { return "torch." + c10::toString(q); }

Json tensor_meta_to_json(const TensorMetadata& m) {
  Json j = Json::object();
  j["shape"] = m.shape;
  j["dtype"] = repr_dtype(m.dtype);
  j["requires_grad"] = m.requires_grad;
  j["stride"] = m.stride;
  j["memory_format"] = m.memory_format ? Json(repr_memory_format(*m.memory_format)) : Json(nullptr);
  j["is_quantized"] = m.is_quantized;
  if (m.qparams) {
    Json q = Json::object();
    q["qscheme"] = qscheme_name(m.qparams->qscheme);
    q["scale"] = m.qparams->scale;
    q["zero_point"] = m.qparams->zero_point;
    q["axis"] = m.qparams->axis ? Json(*m.qparams->axis) : Json(nullptr);
    j["qparams"] = std::move(q);
  }
  return j;
}

TensorMetadata tensor_meta_from_json(const Json& j, const std::string& where) {
  TensorMetadata m;
  m.shape = ints_field(j, "shape", where);
  m.dtype = dtype_from_name(string_field(j, "dtype", where), where + ".dtype");
  m.requires_grad = bool_field(j, "requires_grad", where);
  m.stride = ints_field(j, "stride", where);
  const Json& mf = field(j, "memory_format", where);
  if (!mf.is_null()) {
    if (!mf.is_string()) load_error(where + ".memory_format", "expected a string or null");
    m.memory_format = memory_format_from_name(mf.get<std::string>(), where + ".memory_format");
  }
  m.is_quantized = bool_field(j, "is_quantized", where);
  if (m.is_quantized) {
    const Json& q = field(j, "qparams", where);
    const std::string qwhere = where + ".qparams";
    if (!q.is_object()) load_error(qwhere, "expected an object");
    passes::QParams p;
    const std::string& scheme = string_field(q, "qscheme", qwhere);
    bool known = false;
    for (auto s : {c10::kPerTensorAffine, c10::kPerChannelAffine, c10::kPerTensorSymmetric,
                   c10::kPerChannelSymmetric, c10::kPerChannelAffineFloatQParams})
      if (qscheme_name(s) == scheme) p.qscheme = s, known = true;
    if (!known) load_error(qwhere + ".qscheme", "unknown quantization scheme '" + scheme + "'");
    p.scale = doubles_field(q, "scale", qwhere);
    p.zero_point = doubles_field(q, "zero_point", qwhere);
    const Json& axis = field(q, "axis", qwhere);
    if (!axis.is_null()) {
      if (!axis.is_number_integer()) load_error(qwhere + ".axis", "expected an integer or null");
      p.axis = axis.get<int64_t>();
    }
    m.qparams = std::move(p);
  }
  return m;
}

// A TensorMetadataTree: a tensor's metadata object, or {"tuple": [..]},
// [..] (a list), {"dict": {..}}, {"other": "repr"}.
Json tree_to_json(const TensorMetadataTree& t) {
  using K = TensorMetadataTree::Kind;
  Json items = Json::array();
  for (const auto& i : t.items) items.push_back(tree_to_json(i));
  switch (t.kind) {
    case K::tensor:
      return tensor_meta_to_json(t.tensor);
    case K::tuple:
      return Json{{"tuple", std::move(items)}};
    case K::list:
      return items;
    case K::dict: {
      Json d = Json::object();
      for (size_t i = 0; i < t.keys.size(); ++i) d[t.keys[i]] = std::move(items[i]);
      return Json{{"dict", std::move(d)}};
    }
    case K::other:
      break;
  }
  return Json{{"other", t.other}};
}

TensorMetadataTree tree_from_json(const Json& j, const std::string& where) {
  using K = TensorMetadataTree::Kind;
  TensorMetadataTree t;
  auto items = [&](const Json& a, const std::string& w) {
    if (!a.is_array()) load_error(w, "expected an array");
    for (size_t i = 0; i < a.size(); ++i)
      t.items.push_back(tree_from_json(a[i], w + "[" + std::to_string(i) + "]"));
  };
  if (j.is_array()) {
    t.kind = K::list;
    items(j, where);
  } else if (!j.is_object()) {
    load_error(where, "expected tensor metadata, got " + std::string(j.type_name()));
  } else if (j.contains("shape")) {
    t.kind = K::tensor;
    t.tensor = tensor_meta_from_json(j, where);
  } else if (j.contains("tuple")) {
    t.kind = K::tuple;
    items(j["tuple"], where + ".tuple");
  } else if (j.contains("dict")) {
    t.kind = K::dict;
    const Json& d = j["dict"];
    if (!d.is_object()) load_error(where + ".dict", "expected an object");
    for (auto it = d.begin(); it != d.end(); ++it) {
      t.keys.push_back(it.key());
      t.items.push_back(tree_from_json(it.value(), where + ".dict." + it.key()));
    }
  } else if (j.contains("other")) {
    t.kind = K::other;
    t.other = string_field(j, "other", where);
  } else {
    load_error(
        where,
        "expected tensor metadata (an object with \"shape\"), or a tuple, list, dict or other of them");
  }
  return t;
}

// ---- meta ------------------------------------------------------------------

Json meta_to_json(const Meta& meta) {
  Json j = Json::object();
  for (const auto& [key, value] : meta) {
    if (const auto* m = std::any_cast<TensorMetadata>(&value))
      j[key] = tensor_meta_to_json(*m);
    else if (const auto* t = std::any_cast<TensorMetadataTree>(&value))
      j[key] = tree_to_json(*t);
    else if (const auto* s = std::any_cast<std::string>(&value))
      j[key] = *s;
    else if (const auto* b = std::any_cast<bool>(&value))
      j[key] = *b;
    else if (const auto* i = std::any_cast<int64_t>(&value))
      j[key] = *i;
    else if (const auto* d = std::any_cast<double>(&value))
      j[key] = *d;
  }
  return j;
}

void meta_from_json(const Json& j, Meta& meta, const std::string& where) {
  if (!j.is_object()) load_error(where, "expected an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Json& v = it.value();
    const std::string w = where + "." + it.key();
    if (it.key() == "tensor_meta") {
      TensorMetadataTree t = tree_from_json(v, w);
      if (t.kind == TensorMetadataTree::Kind::tensor)
        meta.set(it.key(), std::move(t.tensor));
      else
        meta.set(it.key(), std::move(t));
    } else if (v.is_string()) {
      meta.set(it.key(), v.get<std::string>());
    } else if (v.is_boolean()) {
      meta.set(it.key(), v.get<bool>());
    } else if (v.is_number_integer()) {
      meta.set(it.key(), v.get<int64_t>());
    } else if (v.is_number_float()) {
      meta.set(it.key(), v.get<double>());
    } else {
      load_error(
          w, "meta values are tensor_meta, strings, booleans or numbers; got " + std::string(v.type_name()));
    }
  }
}

}  // namespace

Json graph_to_json(const Graph& g) {
  Json nodes = Json::array();
  for (Node* n : g.nodes()) {
    const std::string where = "node '" + n->name() + "'";
    Json j = Json::object();
    j["name"] = n->name();
    j["op"] = std::string(op_name(n->op()));
    j["target"] = n->target().str();
    Json args = Json::array();
    for (size_t i = 0; i < n->args().size(); ++i)
      args.push_back(argument_to_json(n->args()[i], where + " args[" + std::to_string(i) + "]"));
    j["args"] = std::move(args);
    Json kwargs = Json::object();
    for (const auto& [k, v] : n->kwargs()) kwargs[k] = argument_to_json(v, where + " kwargs['" + k + "']");
    j["kwargs"] = std::move(kwargs);
    j["type"] = n->type() ? Json(*n->type()) : Json(nullptr);
    j["meta"] = meta_to_json(n->meta());
    nodes.push_back(std::move(j));
  }
  return Json{{"nodes", std::move(nodes)}};
}

std::unique_ptr<Graph> graph_from_json(const Json& j) {
  if (!j.is_object()) load_error("graph", "expected an object, got " + std::string(j.type_name()));
  const Json& nodes = field(j, "nodes", "graph");
  if (!nodes.is_array())
    load_error("graph.nodes", "expected an array, got " + std::string(nodes.type_name()));
  auto g = std::make_unique<Graph>();
  std::unordered_map<std::string, Node*> by_name;
  NodeLookup lookup = [&](const std::string& name, const std::string& where) -> Node* {
    auto it = by_name.find(name);
    if (it == by_name.end())
      load_error(where, "refers to node '" + name +
                            "', which is not defined before this node (nodes are listed in order)");
    return it->second;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& nj = nodes[i];
    std::string where = "graph.nodes[" + std::to_string(i) + "]";
    if (!nj.is_object()) load_error(where, "expected an object, got " + std::string(nj.type_name()));
    const std::string& name = string_field(nj, "name", where);
    where += " ('" + name + "')";
    if (by_name.count(name)) load_error(where, "a second node named '" + name + "' (node names are unique)");
    Op op;
    try {
      op = op_from_name(string_field(nj, "op", where));
    } catch (const LoadError&) {
      throw;
    } catch (const Error& e) {
      load_error(where + ".op", e.what());
    }
    const std::string& target = string_field(nj, "target", where);
    const Json& aj = field(nj, "args", where);
    if (!aj.is_array()) load_error(where + ".args", "expected an array, got " + std::string(aj.type_name()));
    Args args;
    for (size_t a = 0; a < aj.size(); ++a)
      args.push_back(argument_from_json(aj[a], where + ".args[" + std::to_string(a) + "]", lookup));
    const Json& kj = field(nj, "kwargs", where);
    if (!kj.is_object())
      load_error(where + ".kwargs", "expected an object, got " + std::string(kj.type_name()));
    Kwargs kwargs;
    for (auto it = kj.begin(); it != kj.end(); ++it)
      kwargs.emplace_back(it.key(), argument_from_json(it.value(), where + ".kwargs." + it.key(), lookup));
    std::optional<std::string> type;
    if (auto t = nj.find("type"); t != nj.end() && !t->is_null()) {
      if (!t->is_string()) load_error(where + ".type", "expected a string or null");
      type = t->get<std::string>();
    }
    Node* n = nullptr;
    try {
      n = g->create_node(op, Target(target), std::move(args), std::move(kwargs), name, std::move(type));
    } catch (const Error& e) {
      load_error(where, e.what());
    }
    if (n->name() != name)
      load_error(where, "the name '" + name + "' is not usable as a node name (torch.fx would rename it '" +
                            n->name() + "')");
    if (auto m = nj.find("meta"); m != nj.end()) meta_from_json(*m, n->meta(), where + ".meta");
    by_name.emplace(name, n);
  }
  if (!g->output_node()) load_error("graph.nodes", "the graph has no output node");
  return g;
}

}  // namespace fx::detail
