// torch.export's serialized graph -> fx::GraphModule (export_graph.h).
#include "export_graph.h"

#include <fx/error.h>
#include <fx/passes/shape_prop.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>

#include <cerrno>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "../ir/ops_name.h"
#include "../ir/python_names.h"
#include "../serialize/argument_json.h"
#include "schema_enums.h"

namespace fx::detail {

namespace {

const Json& field(const Json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) load_error(where, "expected a JSON object, got " + std::string(obj.type_name()));
  auto it = obj.find(key);
  if (it == obj.end()) load_error(where, std::string("missing \"") + key + "\"");
  return *it;
}

const Json& array_field(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_array()) load_error(where + "." + key, "expected an array, got " + std::string(v.type_name()));
  return v;
}

const std::string& as_string(const Json& v, const std::string& where) {
  if (!v.is_string()) load_error(where, "expected a string, got " + std::string(v.type_name()));
  return v.get_ref<const std::string&>();
}

int64_t as_int(const Json& v, const std::string& where) {
  if (!v.is_number_integer()) load_error(where, "expected an integer, got " + std::string(v.type_name()));
  return v.get<int64_t>();
}

// A float: a JSON number, or the string torch.export writes for a float
// JSON has no number for ("Infinity", "-Infinity", "NaN": attention masks
// hold -inf).
double as_float(const Json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  load_error(where, "expected a number, got " + std::string(v.type_name()));
}

bool as_bool(const Json& v, const std::string& where) {
  if (!v.is_boolean()) load_error(where, "expected true or false, got " + std::string(v.type_name()));
  return v.get<bool>();
}

// A union (schema.py's _Union) is an object with exactly one key: its kind.
std::pair<std::string, const Json*> union_of(const Json& j, const std::string& where) {
  if (!j.is_object() || j.size() != 1)
    load_error(where, "expected an object with one key (a schema union), got " +
                          std::string(j.dump()).substr(0, 80));
  return {j.begin().key(), &j.begin().value()};
}

// torch.export writes SymInt arguments as {"as_name": ...} or {"as_int": ...}.
std::string sym_name(const Json& j, const std::string& where) {
  auto [kind, v] = union_of(j, where);
  if (kind != "as_name")
    load_error(where, "expected a named symbolic value (\"as_name\"), got \"" + kind + "\"");
  return as_string(*v, where + ".as_name");
}

// sympy's srepr of a bare symbol, `Symbol('s77', positive=True, integer=True)`,
// as the symbol's name; anything else as it is.
std::string symbol_of(const std::string& expr) {
  static constexpr std::string_view kPrefix = "Symbol('";
  if (expr.rfind(kPrefix, 0) != 0) return expr;
  size_t end = expr.find('\'', kPrefix.size());
  if (end == std::string::npos || expr.back() != ')') return expr;
  return expr.substr(kPrefix.size(), end - kPrefix.size());
}

// The operators torch.export writes with positional inputs and no schema
// (serialize.py's _SYM_OPS), by their names in the file.
bool is_sym_op(std::string_view target) {
  static const std::unordered_set<std::string_view> kOps = {
      "eq",  "ne",       "le",  "ge",  "lt",      "gt",   "neg", "pos",    "mul",   "add",
      "sub", "floordiv", "mod", "pow", "truediv", "and_", "or_", "lshift", "rshift"};
  if (target.rfind("_operator.", 0) == 0) return kOps.count(target.substr(10)) > 0;
  return target == "math.trunc" || target == "torch.sym_not" || target == "torch.sym_int" ||
         target == "torch.sym_float" || target == "torch.sym_ite" || target == "torch.sym_max" ||
         target == "torch.sym_min" || target == "torch.sym_sqrt";
}

// The file's name of a Python function as fxcpp's target name: the file
// writes `_operator.mul` (the function's __module__), torch.fx prints
// `operator.mul`.
std::string target_name(const std::string& serialized) {
  if (serialized.rfind("_operator.", 0) == 0) return "operator." + serialized.substr(10);
  return serialized;
}

// The dispatcher's operator that a `torch.ops.<namespace>.<op>[.<overload>]`
// name names (a packet names the default overload), or nothing.
std::optional<c10::OperatorHandle> find_operator(std::string_view name) {
  const auto parts = parse_ops_name(name);
  if (!parts) return std::nullopt;
  return c10::Dispatcher::singleton().findSchema(
      {parts->qualified_op(), std::string(parts->dispatcher_overload())});
}

class Reader {
 public:
  Reader(std::string where, int depth)
      : where_(std::move(where)), depth_(depth), graph_(std::make_unique<Graph>()) {}

  std::unique_ptr<GraphModule> read(const Json& g, const std::vector<std::string>& input_names) {
    read_values(g);
    const Json& inputs = array_field(g, "inputs", where_);
    for (size_t i = 0; i < inputs.size(); ++i) placeholder(inputs[i], i, input_names);
    const Json& nodes = array_field(g, "nodes", where_);
    for (size_t i = 0; i < nodes.size(); ++i) node(nodes[i], where_ + ".nodes[" + std::to_string(i) + "]");
    output(g);
    try {
      return std::make_unique<GraphModule>(submodules_, std::move(graph_));
    } catch (const LoadError&) {
      throw;
    } catch (const Error& e) {
      load_error(where_, std::string("the graph does not make a GraphModule: ") + e.what());
    }
  }

 private:
  // tensor_values: the metadata of each tensor by name; sym_int_values etc.
  // only matter to FakeTensor propagation, which fxcpp does not redo.
  void read_values(const Json& g) {
    const Json& tv = field(g, "tensor_values", where_);
    if (!tv.is_object()) load_error(where_ + ".tensor_values", "expected an object");
    for (auto it = tv.begin(); it != tv.end(); ++it) tensor_values_.emplace(it.key(), &it.value());
  }

  void set_meta(Node* n, const std::string& value_name) {
    auto it = tensor_values_.find(value_name);
    if (it == tensor_values_.end()) return;
    const Json& tm = *it->second;
    const std::string where = where_ + ".tensor_values." + value_name;
    const c10::ScalarType dtype = export_scalar_type(field(tm, "dtype", where), where + ".dtype");
    std::vector<std::string> sizes = export_sym_sizes(field(tm, "sizes", where), where + ".sizes");
    std::vector<std::string> strides = export_sym_sizes(field(tm, "strides", where), where + ".strides");
    if (sizes.size() != strides.size())
      load_error(where,
                 std::to_string(sizes.size()) + " sizes but " + std::to_string(strides.size()) + " strides");
    std::vector<int64_t> shape, stride;
    bool is_static = true;
    for (size_t d = 0; d < sizes.size() && is_static; ++d) {
      auto size = static_size(sizes[d]), step = static_size(strides[d]);
      is_static = size && step;
      if (is_static) shape.push_back(*size), stride.push_back(*step);
    }
    if (!is_static) {
      n->meta().set("sym_sizes", std::move(sizes));
      return;
    }
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0 || stride[d] < 0) load_error(where, "a negative size or stride");
    // A tensor on the meta device has the layout and no storage: ShapeProp's
    // extract_tensor_metadata reads its memory format as from any tensor.
    at::Tensor t;
    try {
      t = at::empty_strided(shape, stride, at::TensorOptions().dtype(dtype).device(at::kMeta));
    } catch (const c10::Error& e) {
      load_error(where, e.what_without_backtrace());
    }
    passes::TensorMetadata m = passes::extract_tensor_metadata(t);
    m.requires_grad = as_bool(field(tm, "requires_grad", where), where + ".requires_grad");
    n->meta().set("tensor_meta", std::move(m));
  }

  // Registers `n` under `name`, renaming it exactly (serialize.py's sync_fx_node).
  void sync(const std::string& name, Node* n, const std::string& where) {
    if (by_name_.count(name))
      load_error(where, "a second value named '" + name + "' (value names are unique)");
    if (n->name() != name) {
      try {
        n->set_name(name);
      } catch (const Error& e) {
        load_error(where, e.what());
      }
    }
    by_name_.emplace(name, n);
    set_meta(n, name);
  }

  Node* lookup(const std::string& name, const std::string& where) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) load_error(where, "'" + name + "' names no value defined before this point");
    return it->second;
  }

  void placeholder(const Json& in, size_t i, const std::vector<std::string>& input_names) {
    const std::string where = where_ + ".inputs[" + std::to_string(i) + "]";
    auto [kind, v] = union_of(in, where);
    std::string name;
    if (kind == "as_tensor") {
      name = as_string(field(*v, "name", where + ".as_tensor"), where + ".as_tensor.name");
    } else if (kind == "as_sym_int") {
      name = sym_name(*v, where + ".as_sym_int");
    } else if (kind == "as_int" || kind == "as_float" || kind == "as_bool" || kind == "as_none" ||
               kind == "as_string") {
      name = i < input_names.size() && !input_names[i].empty() ? input_names[i] : "arg" + std::to_string(i);
      Node* n = graph_->placeholder(name);
      by_name_.emplace(n->name(), n);
      return;
    } else if (kind == "as_custom_obj") {
      load_error(where, "a TorchScript custom object input (torch.ScriptObject): fxcpp has no such objects");
    } else {
      load_error(where, "an input of kind \"" + kind + "\" (expected as_tensor or as_sym_int)");
    }
    Node* n = nullptr;
    try {
      n = graph_->placeholder(name);
    } catch (const Error& e) {
      load_error(where, e.what());
    }
    sync(name, n, where);
  }

  Argument tensor_ref(const Json& j, const std::string& where) {
    return lookup(as_string(field(j, "name", where), where + ".name"), where);
  }

  Argument sym_ref(const Json& j, const std::string& where) {
    auto [kind, v] = union_of(j, where);
    if (kind == "as_name") return lookup(as_string(*v, where + ".as_name"), where + ".as_name");
    if (kind == "as_int") return as_int(*v, where + ".as_int");
    if (kind == "as_float") return as_float(*v, where + ".as_float");
    if (kind == "as_bool") return as_bool(*v, where + ".as_bool");
    load_error(where, "a symbolic argument of kind \"" + kind + "\"");
  }

  template <class F>
  List list_of(const Json& v, const std::string& where, F&& item) {
    if (!v.is_array()) load_error(where, "expected an array, got " + std::string(v.type_name()));
    List out;
    out.items.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      out.items.push_back(item(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }

  // serialize.py's deserialize_input.
  Argument argument(const Json& j, const std::string& where) {
    auto [kind, pv] = union_of(j, where);
    const Json& v = *pv;
    const std::string at = where + "." + kind;
    if (kind == "as_none") return None;
    if (kind == "as_tensor") return tensor_ref(v, at);
    if (kind == "as_int") return as_int(v, at);
    if (kind == "as_float") return as_float(v, at);
    if (kind == "as_bool") return as_bool(v, at);
    if (kind == "as_string") return as_string(v, at);
    if (kind == "as_scalar_type") return export_scalar_type(v, at);
    if (kind == "as_memory_format") {
      if (auto f = memory_format_from_schema(as_int(v, at))) return *f;
      load_error(at, "an unknown memory format " + v.dump());
    }
    if (kind == "as_layout") {
      switch (as_int(v, at)) {
        case 1:
          return c10::Layout::Sparse;
        case 2:
          return c10::Layout::SparseCsr;
        case 3:
          return c10::Layout::SparseCsc;
        case 4:
          return c10::Layout::SparseBsr;
        case 5:
          return c10::Layout::SparseBsc;
        case 6:
          return c10::Layout::Mkldnn;
        case 7:
          return c10::Layout::Strided;
        default:
          load_error(at, "an unknown layout " + v.dump());
      }
    }
    if (kind == "as_device") return export_device(v, at);
    if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") return sym_ref(v, at);
    if (kind == "as_tensors")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return tensor_ref(x, w); });
    if (kind == "as_ints")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return Argument(as_int(x, w)); });
    if (kind == "as_floats")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return Argument(as_float(x, w)); });
    if (kind == "as_bools")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return Argument(as_bool(x, w)); });
    if (kind == "as_strings")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return Argument(as_string(x, w)); });
    if (kind == "as_sym_ints" || kind == "as_sym_floats" || kind == "as_sym_bools")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return sym_ref(x, w); });
    if (kind == "as_optional_tensors")
      return list_of(v, at, [&](const Json& x, const std::string& w) { return optional_tensor(x, w); });
    if (kind == "as_optional_tensor") return optional_tensor(v, at);
    if (kind == "as_int_lists")
      return list_of(v, at, [&](const Json& x, const std::string& w) {
        return Argument(Tuple{list_of(x, w, [&](const Json& y, const std::string& w2) {
                                return Argument(as_int(y, w2));
                              }).items});
      });
    if (kind == "as_float_lists")
      return list_of(v, at, [&](const Json& x, const std::string& w) {
        return Argument(
            list_of(x, w, [&](const Json& y, const std::string& w2) { return Argument(as_float(y, w2)); }));
      });
    if (kind == "as_nested_tensors")
      return list_of(v, at, [&](const Json& x, const std::string& w) {
        return Argument(
            list_of(x, w, [&](const Json& y, const std::string& w2) { return tensor_ref(y, w2); }));
      });
    if (kind == "as_string_to_argument") {
      if (!v.is_object()) load_error(at, "expected an object");
      Dict d;
      for (auto it = v.begin(); it != v.end(); ++it) {
        // One level, as torch writes them (a kernel's keyword arguments): a
        // deeper nesting would only recurse.
        if (union_of(it.value(), at + "." + it.key()).first == "as_string_to_argument")
          load_error(at + "." + it.key(), "a dict nested in a dict argument");
        d.items.emplace_back(it.key(), argument(it.value(), at + "." + it.key()));
      }
      return d;
    }
    if (kind == "as_graph") return subgraph(v, at);
    if (kind == "as_custom_obj")
      load_error(at, "a TorchScript custom object (torch.ScriptObject): fxcpp has no such objects");
    if (kind == "as_complex") load_error(at, "a complex constant: fxcpp's graphs hold no complex numbers");
    if (kind == "as_operator") load_error(at, "an operator as an argument: fxcpp's graphs cannot hold one");
    load_error(where, "an argument of unknown kind \"" + kind + "\"");
  }

  Argument optional_tensor(const Json& j, const std::string& where) {
    auto [kind, v] = union_of(j, where);
    if (kind == "as_none") return None;
    if (kind == "as_tensor") return tensor_ref(*v, where + ".as_tensor");
    load_error(where, "an optional tensor of kind \"" + kind + "\"");
  }

  // A higher-order operator's branch or body: its own GraphModule, a
  // submodule of this one, read through a get_attr node made here, as
  // torch.export makes it while reading the operator's inputs.
  Argument subgraph(const Json& v, const std::string& where) {
    const std::string& name = as_string(field(v, "name", where), where + ".name");
    if (!is_identifier(name) || is_python_keyword(name))
      load_error(where + ".name", "'" + name + "' is not a Python name");
    if (submodules_.count(name)) load_error(where + ".name", "a second subgraph named '" + name + "'");
    // Each level is a few frames of this reader; a file nesting thousands of
    // branches would overflow the stack.
    if (depth_ >= kMaxDepth)
      load_error(where, "subgraphs nested deeper than " + std::to_string(kMaxDepth) + " levels");
    auto module = Reader(where + ".graph", depth_ + 1).read(field(v, "graph", where), {});
    submodules_.emplace(name, GraphModule::Attr(std::shared_ptr<GraphModule>(std::move(module))));
    Node* n = nullptr;
    try {
      n = graph_->create_node(Op::get_attr, Target(name), {}, {}, name);
    } catch (const Error& e) {
      load_error(where, e.what());
    }
    if (n->name() != name) load_error(where, "the name '" + name + "' is taken by a value of the graph");
    pending_hop_args_.push_back(n);
    return n;
  }

  void node(const Json& nj, const std::string& where0) {
    std::string where = where0;
    const std::string& serialized = as_string(field(nj, "target", where), where + ".target");
    std::string name;
    if (auto it = nj.find("name"); it != nj.end() && !it->is_null()) name = as_string(*it, where + ".name");
    if (!name.empty()) where += " ('" + name + "')";
    const Json& inputs = array_field(nj, "inputs", where);
    const Json& outputs = array_field(nj, "outputs", where);
    const bool hop = serialized.rfind("torch.ops.higher_order.", 0) == 0;
    const bool sym = is_sym_op(serialized);
    // Checked before it becomes a Target: targets are interned for the life
    // of the process, and a file must not grow that table with names that
    // name nothing.
    std::optional<c10::OperatorHandle> op;
    if (hop) {
      if (serialized != "torch.ops.higher_order.cond" && serialized != "torch.ops.higher_order.while_loop")
        load_error(where + ".target", "unknown higher-order operator " + serialized +
                                          " (fxcpp runs torch.ops.higher_order.cond and while_loop)");
    } else if (!sym) {
      op = find_operator(serialized);
      if (!op && serialized.rfind("torch.ops.", 0) == 0)
        load_error(where + ".target",
                   "unknown operator " + serialized +
                       ": no such operator is registered with the dispatcher (a custom op must be "
                       "registered, by loading its library, before the file is read)");
      if (!op)
        load_error(where + ".target",
                   "unknown target " + serialized +
                       " (fxcpp reads torch.ops operators, higher-order operators and the symbolic "
                       "integer operators)");
    }
    const Target target(target_name(serialized));
    Args args;
    Kwargs kwargs;
    pending_hop_args_.clear();
    if (sym || hop) {
      // Inputs in order; a HOP's keyword inputs are the named ones not marked positional.
      for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string w = where + ".inputs[" + std::to_string(i) + "]";
        const Json& in = inputs[i];
        Argument a = argument(field(in, "arg", w), w + ".arg");
        const std::string& arg_name = as_string(field(in, "name", w), w + ".name");
        auto kind = in.find("kind");
        const bool positional =
            sym || arg_name.empty() || (kind != in.end() && kind->is_number_integer() && *kind == 1);
        if (positional)
          args.push_back(std::move(a));
        else
          kwargs.emplace_back(arg_name, std::move(a));
      }
    } else {
      bind_schema(op->schema(), inputs, where, args, kwargs);
      if (name.empty() && op->schema().returns().size() == 1 &&
          op->schema().returns()[0].real_type()->kind() == c10::TypeKind::TensorType && outputs.size() == 1)
        if (auto [k, v] = union_of(outputs[0], where + ".outputs[0]"); k == "as_tensor")
          name = as_string(field(*v, "name", where), where + ".outputs[0].as_tensor.name");
    }
    Node* n = nullptr;
    try {
      n = graph_->create_node(Op::call_function, target, std::move(args), std::move(kwargs),
                              name.empty() ? std::nullopt : std::optional(name));
    } catch (const Error& e) {
      load_error(where, e.what());
    }
    const Json* metadata = nullptr;
    if (auto m = nj.find("metadata"); m != nj.end() && m->is_object()) metadata = &*m;
    set_node_metadata(n, metadata, where);
    for (Node* g : pending_hop_args_) set_node_metadata(g, metadata, where);
    node_outputs(nj, outputs, n, hop, where);
  }

  // Of the metadata, what fxcpp's nodes keep: the stack trace.
  static void set_node_metadata(Node* n, const Json* metadata, const std::string& where) {
    if (!metadata) return;
    if (auto st = metadata->find("stack_trace"); st != metadata->end())
      if (const std::string& s = as_string(*st, where + ".metadata.stack_trace"); !s.empty())
        n->set_stack_trace(s);
  }

  // serialize.py's deserialize_inputs: each schema argument present in the
  // file goes where its recorded kind says, or, for files without kinds,
  // positional when it has no default and is not keyword-only.
  void bind_schema(const c10::FunctionSchema& schema, const Json& inputs, const std::string& where,
                   Args& args, Kwargs& kwargs) {
    std::unordered_map<std::string, std::pair<const Json*, int64_t>> given;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string w = where + ".inputs[" + std::to_string(i) + "]";
      const std::string& arg_name = as_string(field(inputs[i], "name", w), w + ".name");
      int64_t kind = 0;
      if (auto k = inputs[i].find("kind"); k != inputs[i].end() && !k->is_null())
        kind = as_int(*k, w + ".kind");
      given[arg_name] = {&inputs[i], kind};
    }
    for (const auto& sa : schema.arguments()) {
      auto it = given.find(sa.name());
      if (it == given.end()) {
        if (!sa.default_value() && !sa.kwarg_only())
          load_error(where,
                     "the operator's argument '" + sa.name() + "' is missing (" + toString(schema) + ")");
        continue;
      }
      const std::string w = where + ".inputs['" + sa.name() + "']";
      Argument a = argument(field(*it->second.first, "arg", w), w + ".arg");
      const int64_t kind = it->second.second;
      // Kind 1 is positional and 2 keyword; with no kind, a required
      // argument is positional. A Python keyword cannot be passed by name.
      const bool positional =
          kind == 1 || (kind != 2 && !sa.default_value() && !sa.kwarg_only()) || is_python_keyword(sa.name());
      if (positional)
        args.push_back(std::move(a));
      else
        kwargs.emplace_back(sa.name(), std::move(a));
    }
  }

  Node* getitem(Node* of, int64_t index, std::optional<std::string> name, const std::string& where) {
    Node* g = nullptr;
    try {
      g = graph_->create_node(Op::call_function, Target("operator.getitem"), {of, index}, {}, name);
    } catch (const Error& e) {
      load_error(where, e.what());
    }
    if (auto st = of->stack_trace()) g->set_stack_trace(*st);
    return g;
  }

  // serialize.py's generate_getitems. `items` are Arguments, or, for one
  // output that is a list (`as_tensors`), bare TensorArguments.
  void getitems(Node* of, const Json& items, const std::string& where, bool tensor_arguments = false) {
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string w = where + "[" + std::to_string(i) + "]";
      const auto idx = static_cast<int64_t>(i);
      if (tensor_arguments) {
        const std::string& name = as_string(field(items[i], "name", w), w + ".name");
        sync(name, getitem(of, idx, name, w), w);
        continue;
      }
      auto [kind, v] = union_of(items[i], w);
      if (kind == "as_tensor") {
        const std::string& name = as_string(field(*v, "name", w), w + ".as_tensor.name");
        sync(name, getitem(of, idx, name, w), w);
      } else if (kind == "as_sym_int" || kind == "as_sym_float") {
        const std::string name = sym_name(*v, w + "." + kind);
        sync(name, getitem(of, idx, name, w), w);
      } else if (kind == "as_tensors") {
        if (!v->is_array()) load_error(w + ".as_tensors", "expected an array");
        Node* list = getitem(of, idx, std::nullopt, w);
        for (size_t k = 0; k < v->size(); ++k) {
          const std::string wk = w + ".as_tensors[" + std::to_string(k) + "]";
          const std::string& name = as_string(field((*v)[k], "name", wk), wk + ".name");
          sync(name, getitem(list, static_cast<int64_t>(k), name, wk), wk);
        }
      } else if (kind == "as_none") {
        getitem(of, idx, "as_none", w);
      } else {
        load_error(w, "an output of kind \"" + kind + "\"");
      }
    }
  }

  // serialize.py's deserialize_outputs.
  void node_outputs(const Json& nj, const Json& outputs, Node* n, bool hop, const std::string& where) {
    const std::string w = where + ".outputs";
    if (outputs.empty()) {
      by_name_.emplace(n->name(), n);
      return;
    }
    auto [kind0, v0] = union_of(outputs[0], w + "[0]");
    if (outputs.size() == 1 && hop && kind0 != "as_none") {
      // A HOP returns a tuple unless the file says it returns one tensor.
      auto single = nj.find("is_hop_single_tensor_return");
      if (single == nj.end() || !single->is_boolean() || !single->get<bool>()) {
        by_name_.emplace(n->name(), n);
        getitems(n, outputs, w);
        return;
      }
    }
    if (outputs.size() == 1 && kind0 == "as_tensor") {
      sync(as_string(field(*v0, "name", w), w + "[0].as_tensor.name"), n, w);
      return;
    }
    if (outputs.size() == 1 && (kind0 == "as_sym_int" || kind0 == "as_sym_float" || kind0 == "as_sym_bool")) {
      sync(sym_name(*v0, w + "[0]." + kind0), n, w);
      return;
    }
    if (outputs.size() == 1 && kind0 == "as_none") {
      // torch renames such a node `<target>_unused` (its Graph._target_to_str).
      std::string unused = snake_case(n->target().python_name()) + "_unused";
      for (char& c : unused)
        if (c == '.') c = '_';
      try {
        n->set_name(unused);
      } catch (const Error&) {  // taken: keep the name create_node gave
      }
      by_name_.emplace(n->name(), n);
      return;
    }
    by_name_.emplace(n->name(), n);
    if (outputs.size() == 1) {
      if (kind0 != "as_tensors")
        load_error(w + "[0]", "a single output of kind \"" + kind0 + "\" (expected as_tensors)");
      if (!v0->is_array()) load_error(w + "[0].as_tensors", "expected an array");
      getitems(n, *v0, w + "[0].as_tensors", /*tensor_arguments=*/true);
    } else {
      getitems(n, outputs, w);
    }
  }

  void output(const Json& g) {
    const Json& outs = array_field(g, "outputs", where_);
    std::vector<Argument> items;
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string w = where_ + ".outputs[" + std::to_string(i) + "]";
      auto [kind, v] = union_of(outs[i], w);
      if (kind == "as_tensor")
        items.push_back(tensor_ref(*v, w + ".as_tensor"));
      else if (kind == "as_sym_int" || kind == "as_sym_bool" || kind == "as_sym_float")
        items.push_back(lookup(sym_name(*v, w + "." + kind), w));
      else if (kind == "as_int" || kind == "as_float" || kind == "as_bool" || kind == "as_none")
        items.push_back(argument(outs[i], w));
      else
        load_error(w, "an output of kind \"" + kind + "\"");
    }
    bool single = false;
    if (auto s = g.find("is_single_tensor_return"); s != g.end() && s->is_boolean()) single = s->get<bool>();
    if (single && items.size() != 1)
      load_error(where_ + ".outputs",
                 "a single-tensor return with " + std::to_string(items.size()) + " outputs");
    graph_->output(single ? items[0] : Argument(Tuple{std::move(items)}));
  }

  static constexpr int kMaxDepth = 64;
  std::string where_;
  int depth_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, GraphModule::Attr> submodules_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, const Json*> tensor_values_;
  std::vector<Node*> pending_hop_args_;
};

}  // namespace

c10::ScalarType export_scalar_type(const Json& j, const std::string& where) {
  if (auto t = scalar_type_from_schema(as_int(j, where))) return *t;
  load_error(where, "an unknown dtype number " + j.dump() + " (torch.export's ScalarType)");
}

std::optional<int64_t> static_size(const std::string& size) {
  if (size.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(size.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

std::vector<std::string> export_sym_sizes(const Json& sizes, const std::string& where) {
  if (!sizes.is_array()) load_error(where, "expected an array, got " + std::string(sizes.type_name()));
  std::vector<std::string> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const std::string w = where + "[" + std::to_string(d) + "]";
    auto [kind, v] = union_of(sizes[d], w);
    if (kind == "as_int")
      out.push_back(std::to_string(as_int(*v, w + ".as_int")));
    else if (kind == "as_expr")
      out.push_back(symbol_of(as_string(field(*v, "expr_str", w + ".as_expr"), w + ".as_expr.expr_str")));
    else
      load_error(w, "a size of kind \"" + kind + "\"");
  }
  return out;
}

c10::Device export_device(const Json& j, const std::string& where) {
  std::string device = as_string(field(j, "type", where), where + ".type");
  if (auto idx = j.find("index"); idx != j.end() && !idx->is_null())
    device += ":" + std::to_string(as_int(*idx, where + ".index"));
  try {
    return c10::Device(device);
  } catch (const c10::Error& e) {
    load_error(where, e.what_without_backtrace());
  }
}

std::unique_ptr<GraphModule> graph_module_from_export(const Json& g, const std::string& where,
                                                      const std::vector<std::string>& input_names) {
  return Reader(where, 0).read(g, input_names);
}

}  // namespace fx::detail
