// fx::save_exported: an ExportedProgram as torch.export.save writes it
// (exported_program.h; the layout is load_exported.cpp's).
#include <fx/exported_program.h>
#include <fx/passes/shape_prop.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <unordered_map>

#include "export_graph.h"
#include "schema_enums.h"

namespace fx {

namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void refuse(const Node* n, const std::string& what) {
  throw Error("save_exported: node '" + n->name() + "': " + what);
}

int64_t scalar_type_number(c10::ScalarType t) {
  if (auto n = detail::schema_scalar_type(t)) return *n;
  throw Error(std::string("save_exported: torch.export has no ScalarType for ") + c10::toString(t));
}

Json device_json(const c10::Device& d) {
  return Json{{"type", c10::DeviceTypeName(d.type(), true)},
              {"index", d.has_index() ? Json(d.index()) : Json(nullptr)}};
}

Json ints_of(const std::vector<int64_t>& v) {
  Json out = Json::array();
  for (int64_t x : v) out.push_back(Json{{"as_int", x}});
  return out;
}

// A symbolic size as the file holds it: `as_int` for digits, else
// `as_expr` with sympy's srepr (a symbol's name, "s0", spelled out) and the
// example's value as the hint.
Json sym_int_json(const std::string& e, int64_t hint) {
  if (const auto size = detail::static_size(e)) return Json{{"as_int", *size}};
  const bool symbol =
      e.size() > 1 && e[0] == 's' && e.find_first_not_of("0123456789", 1) == std::string::npos;
  const std::string expr = symbol ? "Symbol('" + e + "', positive=True, integer=True)" : e;
  return Json{{"as_expr", {{"expr_str", expr}, {"hint", {{"as_int", hint}}}}}};
}

// `m`'s sizes and strides, symbolic where `n` (a dynamic capture's node) has
// expressions for them.
Json tensor_meta_json(const passes::TensorMetadata& m, const c10::Device& device = at::kCPU,
                      const Node* n = nullptr) {
  auto values = [&](const std::vector<int64_t>& hints, const char* key) {
    const auto* exprs = n ? n->meta().get<std::vector<std::string>>(key) : nullptr;
    if (!exprs || exprs->size() != hints.size()) return ints_of(hints);
    Json out = Json::array();
    for (size_t i = 0; i < hints.size(); ++i) out.push_back(sym_int_json((*exprs)[i], hints[i]));
    return out;
  };
  return Json{{"dtype", scalar_type_number(m.dtype)},
              {"sizes", values(m.shape, "sym_sizes")},
              {"requires_grad", m.requires_grad},
              {"device", device_json(device)},
              {"strides", values(m.stride, "sym_strides")},
              {"storage_offset", {{"as_int", 0}}},
              {"layout", 7}};
}

// A node whose value is a SymInt (sym_size.int, SymInt arithmetic of a
// dynamic capture): fx::capture gives each its example's value.
bool is_sym_int(const Node* n) { return n && n->meta().contains("sym_hint"); }

// A value whose sizes follow a dynamic capture's symbols in a way fxcpp has
// no expression for: refused where its metadata or value would be written.
void refuse_unknown_sizes(const Node* n) {
  if (const auto* why = n->meta().get<std::string>("sym_sizes_unknown"))
    refuse(n, "a size that follows the dynamic dimensions with no expression fxcpp can write: " + *why);
}

// Python's json.dumps for floats JSON has no number for, as torch writes them.
Json float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

class GraphWriter {
 public:
  // `module` owns the graph: the branches its get_attr nodes name are its submodules.
  explicit GraphWriter(const GraphModule& module) : module_(module), g_(module.graph()) {
    for (const Node* n : g_.nodes()) symbolic_ |= n->meta().contains("sym_strides") || is_sym_int(n);
  }

  Json write() {
    Json inputs = Json::array(), nodes = Json::array();
    for (const Node* n : g_.nodes()) {
      if (n->op() == Op::placeholder) {
        inputs.push_back(Json{{"as_tensor", {{"name", n->name()}}}});
        value_meta(n, n->name());
      }
    }
    for (const Node* n : g_.nodes()) {
      if (n->op() == Op::get_attr) {
        // A branch is written where its higher-order operator reads it.
        if (!subgraph_of(n)) refuse(n, "a get_attr of a tensor: an exported program takes them as inputs");
        continue;
      }
      if (n->op() != Op::call_function) continue;
      if (is_output_getitem(n)) continue;
      nodes.push_back(node(n));
    }
    Json outputs = Json::array();
    const Node* out = g_.output_node();
    // A subgraph may return one tensor (while_loop's condition), not a tuple.
    const bool single = !out->args().at(0).is<Tuple>();
    if (single)
      outputs.push_back(output_arg(out, out->args().at(0)));
    else
      for (const auto& a : out->args().at(0).get<Tuple>().items) outputs.push_back(output_arg(out, a));
    return Json{{"inputs", inputs},
                {"outputs", outputs},
                {"nodes", nodes},
                {"tensor_values", tensor_values_},
                {"sym_int_values", sym_int_values_},
                {"sym_bool_values", Json::object()},
                {"is_single_tensor_return", single},
                {"custom_obj_values", Json::object()},
                {"sym_float_values", Json::object()}};
  }

 private:
  const GraphModule* subgraph_of(const Node* n) const {
    if (!n || n->op() != Op::get_attr) return nullptr;
    return dynamic_cast<const GraphModule*>(module_.get_submodule(n->target().str()));
  }

  // torch.ops.higher_order.cond / while_loop: positional inputs without
  // names (serialize.py's serialize_hoo_inputs), the branches as graphs, the
  // outputs named by their getitems.
  Json higher_order(const Node* n) {
    Json inputs = Json::array();
    for (const auto& a : n->args()) {
      Json arg;
      if (const GraphModule* sub = subgraph_of(a.node())) {
        arg = Json{{"as_graph", {{"name", a.node()->target().str()}, {"graph", GraphWriter(*sub).write()}}}};
      } else if (a.node()) {
        arg = Json{{"as_tensor", {{"name", a.node()->name()}}}};
      } else if (a.is<Tuple>() || a.is<List>()) {
        const auto& items = a.is<Tuple>() ? a.get<Tuple>().items : a.get<List>().items;
        Json names = Json::array();
        for (const auto& x : items) {
          if (!x.node()) refuse(n, "an operand that is not a tensor");
          names.push_back(Json{{"name", x.node()->name()}});
        }
        arg = Json{{"as_tensors", names}};
      } else {
        refuse(n, "an argument of kind " + std::string(a.kind_name()) + " to a higher-order operator");
      }
      inputs.push_back(Json{{"name", ""}, {"arg", arg}, {"kind", 1}});
    }
    std::vector<const Node*> items;
    for (const Node* u : n->users()) {
      if (u->target() != "operator.getitem" || !u->args().at(1).is<int64_t>())
        refuse(u, "reads the operator's result other than by index");
      const auto i = static_cast<size_t>(u->args()[1].get<int64_t>());
      if (items.size() <= i) items.resize(i + 1, nullptr);
      items[i] = u;
    }
    Json outputs = Json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i])
        refuse(n, "output " + std::to_string(i) + " is never read; torch.export names every output");
      value_meta(items[i], items[i]->name());
      outputs.push_back(Json{{"as_tensor", {{"name", items[i]->name()}}}});
    }
    Json metadata = Json::object();
    if (auto st = n->stack_trace()) metadata["stack_trace"] = *st;
    return Json{{"target", n->target().str()},
                {"inputs", inputs},
                {"outputs", outputs},
                {"metadata", metadata},
                {"is_hop_single_tensor_return", false},
                {"name", n->name()}};
  }

  // A getitem of a multi-output operator: torch.export writes it as one of
  // that operator's outputs, not as a node.
  static bool is_output_getitem(const Node* n) {
    if (n->target() != "operator.getitem") return false;
    const Node* of = n->args().at(0).node();
    return of && of->op() == Op::call_function && of->target().ops_name();
  }

  void value_meta(const Node* n, const std::string& name) {
    const auto* m = n->meta().get<passes::TensorMetadata>("tensor_meta");
    if (!m)
      refuse(n,
             "no meta[\"tensor_meta\"]: torch.export records every tensor's metadata (capture records it)");
    refuse_unknown_sizes(n);
    tensor_values_[name] = tensor_meta_json(*m, at::kCPU, n);
  }

  Json output_arg(const Node* where, const Argument& a) {
    if (is_sym_int(a.node()))
      refuse(a.node(), "an integer output that follows the dynamic sizes: fxcpp does not write it yet");
    if (const Node* n = a.node()) return Json{{"as_tensor", {{"name", n->name()}}}};
    if (a.is_none()) return Json{{"as_none", true}};
    if (a.is<bool>()) return Json{{"as_bool", a.get<bool>()}};
    if (a.is<int64_t>()) return Json{{"as_int", a.get<int64_t>()}};
    if (a.is<double>()) return Json{{"as_float", float_json(a.get<double>())}};
    refuse(where,
           "an output of kind " + std::string(a.kind_name()) + " (torch.export returns tensors and numbers)");
  }

  // serialize.py's serialize_input, by the schema argument's type.
  Json argument(const Node* n, const Argument& a, const c10::TypePtr& type) {
    using K = c10::TypeKind;
    if (a.is_none()) return Json{{"as_none", true}};
    if (is_sym_int(a.node())) return Json{{"as_sym_int", {{"as_name", a.node()->name()}}}};
    if (const Node* in = a.node()) return Json{{"as_tensor", {{"name", in->name()}}}};
    if (a.is<bool>()) return Json{{"as_bool", a.get<bool>()}};
    if (a.is<int64_t>()) {
      const c10::TypePtr t =
          type->kind() == K::OptionalType ? type->castRaw<c10::OptionalType>()->getElementType() : type;
      if (t->kind() == K::SymIntType) return Json{{"as_sym_int", {{"as_int", a.get<int64_t>()}}}};
      return Json{{"as_int", a.get<int64_t>()}};
    }
    if (a.is<double>()) return Json{{"as_float", float_json(a.get<double>())}};
    if (a.is<std::string>()) return Json{{"as_string", a.get<std::string>()}};
    if (a.is<c10::ScalarType>())
      return Json{{"as_scalar_type", scalar_type_number(a.get<c10::ScalarType>())}};
    if (a.is<c10::Layout>()) {
      switch (a.get<c10::Layout>()) {
        case c10::Layout::Strided:
          return Json{{"as_layout", 7}};
        case c10::Layout::Sparse:
          return Json{{"as_layout", 1}};
        default:
          refuse(n, "a layout torch.export does not write");
      }
    }
    if (a.is<c10::MemoryFormat>()) {
      if (auto f = detail::schema_memory_format(a.get<c10::MemoryFormat>()))
        return Json{{"as_memory_format", *f}};
      refuse(n, "an unknown memory format");
    }
    if (a.is<c10::Device>()) return Json{{"as_device", device_json(a.get<c10::Device>())}};
    const std::vector<Argument>* items = nullptr;
    if (const auto* l = std::get_if<List>(&a.storage())) items = &l->items;
    if (const auto* t = std::get_if<Tuple>(&a.storage())) items = &t->items;
    if (!items)
      refuse(n, "an argument of kind " + std::string(a.kind_name()) + " torch.export does not write");
    c10::TypePtr element = type;
    if (element->kind() == K::OptionalType) element = element->castRaw<c10::OptionalType>()->getElementType();
    if (element->kind() == K::ListType) element = element->castRaw<c10::ListType>()->getElementType();
    const K ek = element->kind();
    Json out = Json::array();
    if (ek == K::TensorType) {
      for (const auto& x : *items) {
        if (!x.node()) refuse(n, "a tensor list holds a " + std::string(x.kind_name()));
        out.push_back(Json{{"name", x.node()->name()}});
      }
      return Json{{"as_tensors", out}};
    }
    if (ek == K::OptionalType) {  // Tensor?[]
      for (const auto& x : *items)
        out.push_back(x.node() ? Json{{"as_tensor", {{"name", x.node()->name()}}}} : Json{{"as_none", true}});
      return Json{{"as_optional_tensors", out}};
    }
    if (ek == K::IntType || ek == K::SymIntType) {
      bool symbolic = false;
      for (const auto& x : *items) symbolic |= is_sym_int(x.node());
      for (const auto& x : *items) {
        if (symbolic && is_sym_int(x.node())) {
          out.push_back(Json{{"as_name", x.node()->name()}});
          continue;
        }
        if (!x.is<int64_t>()) refuse(n, "an int list holds a " + std::string(x.kind_name()));
        out.push_back(symbolic ? Json{{"as_int", x.get<int64_t>()}} : Json(x.get<int64_t>()));
      }
      return symbolic ? Json{{"as_sym_ints", out}} : Json{{"as_ints", out}};
    }
    if (ek == K::FloatType) {
      for (const auto& x : *items)
        out.push_back(float_json(x.is<int64_t>() ? double(x.get<int64_t>()) : x.get<double>()));
      return Json{{"as_floats", out}};
    }
    if (ek == K::BoolType) {
      for (const auto& x : *items) out.push_back(x.get<bool>());
      return Json{{"as_bools", out}};
    }
    refuse(n, "a list argument of type " + type->str() + " torch.export does not write");
  }

  // The names of a multi-output operator's values: its getitem users', or
  // `<node>_unused_<i>` as torch.export names outputs nobody reads; their
  // metadata from the getitems, or, for unused ones and the elements of a
  // list, from running the operator on meta tensors.
  Json outputs(const Node* n, const c10::FunctionSchema& schema) {
    const auto& returns = schema.returns();
    if (returns.empty()) return Json::array();
    const bool list = returns.size() == 1 && returns[0].real_type()->kind() == c10::TypeKind::ListType;
    if (returns.size() == 1 && !list) {
      value_meta(n, n->name());
      return Json::array({Json{{"as_tensor", {{"name", n->name()}}}}});
    }
    std::unordered_map<int64_t, const Node*> by_index;
    for (const Node* u : n->users())
      if (u->target() == "operator.getitem" && u->args().size() == 2 && u->args()[1].is<int64_t>())
        by_index.emplace(u->args()[1].get<int64_t>(), u);
    // The operator runs only when a value's metadata is missing, or to learn
    // how many tensors a list holds.
    std::optional<std::vector<passes::TensorMetadata>> run;
    auto read = [&](int64_t i) -> const passes::TensorMetadata* {
      auto it = by_index.find(i);
      return it == by_index.end() ? nullptr : it->second->meta().get<passes::TensorMetadata>("tensor_meta");
    };
    if (list) {
      run = meta_run(n);
    } else {
      for (size_t i = 0; i < returns.size() && !run; ++i)
        if (!read(static_cast<int64_t>(i))) run = meta_run(n);
    }
    const size_t count = run ? run->size() : returns.size();
    Json items = Json::array();
    for (size_t i = 0; i < count; ++i) {
      const auto idx = static_cast<int64_t>(i);
      auto it = by_index.find(idx);
      const std::string name =
          it != by_index.end() ? it->second->name() : n->name() + "_unused_" + std::to_string(i);
      const passes::TensorMetadata* m = read(idx);
      if (!m && symbolic_)
        refuse(n, "output " + std::to_string(i) +
                      " has no node, so no symbolic sizes (torch.export names every output)");
      if (m) refuse_unknown_sizes(it->second);
      tensor_values_[name] = m ? tensor_meta_json(*m, at::kCPU, it->second) : tensor_meta_json((*run)[i]);
      items.push_back(list ? Json{{"name", name}} : Json{{"as_tensor", {{"name", name}}}});
    }
    return list ? Json::array({Json{{"as_tensors", items}}}) : items;
  }

  // The operator's outputs' metadata, from running it on meta tensors shaped
  // as its inputs' tensor_meta (no data touched), or, for operators that have
  // no meta kernel in C++ (native_batch_norm's is Python's), on zeros.
  std::vector<passes::TensorMetadata> meta_run(const Node* n) {
    auto run_on = [&](c10::Device device) {
      auto value_of = [&](const Node* in) -> c10::IValue {
        const auto* m = in->meta().get<passes::TensorMetadata>("tensor_meta");
        if (!m) refuse(in, "no meta[\"tensor_meta\"]");
        return at::zeros(m->shape, at::TensorOptions().dtype(m->dtype).device(device))
            .as_strided(m->shape, m->stride);
      };
      std::vector<c10::IValue> args;
      for (const auto& a : n->args()) args.push_back(to_ivalue(a, value_of));
      IValueKwargs kwargs;
      for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, to_ivalue(v, value_of));
      return resolve_function(n->target())->call(std::move(args), std::move(kwargs));
    };
    c10::IValue out;
    try {
      out = run_on(at::kMeta);
    } catch (const std::exception&) {
      try {
        out = run_on(at::kCPU);
      } catch (const std::exception& e) {
        refuse(n, std::string("its outputs' metadata (the operator on zeros): ") + e.what());
      }
    }
    std::vector<passes::TensorMetadata> metas;
    std::vector<c10::IValue> items =
        out.isTuple() ? out.toTupleRef().elements().vec() : out.toListRef().vec();
    for (const auto& v : items) {
      if (!v.isTensor())
        refuse(n, "an output that is not a tensor (torch.export writes tensor outputs here)");
      metas.push_back(passes::extract_tensor_metadata(v.toTensor()));
    }
    return metas;
  }

  // A SymInt node of a dynamic capture: sym_size.int by its schema's names,
  // SymInt arithmetic as `_operator.mul(a, b)`, as torch.export writes them;
  // its value's expression goes into sym_int_values.
  Json sym_int_node(const Node* n) {
    refuse_unknown_sizes(n);
    const bool sym_size = n->target() == "torch.ops.aten.sym_size.int";
    const char* names[2] = {sym_size ? "self" : "a", sym_size ? "dim" : "b"};
    Json inputs = Json::array();
    for (size_t i = 0; i < 2 && i < n->args().size(); ++i) {
      const Argument& a = n->args()[i];
      Json arg;
      if (sym_size && i == 0)
        arg = Json{{"as_tensor", {{"name", a.node()->name()}}}};
      else if (is_sym_int(a.node()))
        arg = Json{{"as_sym_int", {{"as_name", a.node()->name()}}}};
      else if (a.is<int64_t>())
        arg = sym_size ? Json{{"as_int", a.get<int64_t>()}}
                       : Json{{"as_sym_int", {{"as_int", a.get<int64_t>()}}}};
      else
        refuse(n, "an operand of kind " + std::string(a.kind_name()) + " to SymInt arithmetic");
      inputs.push_back(Json{{"name", names[i]}, {"arg", arg}, {"kind", 1}});
    }
    sym_int_values_[n->name()] =
        sym_int_json(*n->meta().get<std::string>("sym_expr"), *n->meta().get<int64_t>("sym_hint"));
    Json metadata = Json::object();
    if (auto st = n->stack_trace()) metadata["stack_trace"] = *st;
    std::string target = n->target().str();
    if (target.rfind("operator.", 0) == 0) target = "_" + target;  // Python's module of operator.mul
    return Json{{"target", target},
                {"inputs", inputs},
                {"outputs", Json::array({Json{{"as_sym_int", {{"as_name", n->name()}}}}})},
                {"metadata", metadata},
                {"is_hop_single_tensor_return", nullptr},
                {"name", n->name()}};
  }

  Json node(const Node* n) {
    if (is_sym_int(n)) return sym_int_node(n);
    if (n->target().str().rfind("torch.ops.higher_order.", 0) == 0) return higher_order(n);
    const c10::OperatorHandle* op = n->target().ops_name() ? n->target().operator_handle() : nullptr;
    if (!op) refuse(n, "its target " + n->target().str() + " is not a dispatcher operator");
    const c10::FunctionSchema& schema = op->schema();
    Json inputs = Json::array();
    const auto& sargs = schema.arguments();
    for (size_t i = 0; i < sargs.size(); ++i) {
      const auto& sa = sargs[i];
      const Argument* kw = nullptr;
      for (const auto& [k, v] : n->kwargs())
        if (k == sa.name()) kw = &v;
      if (kw) {
        inputs.push_back(Json{{"name", sa.name()}, {"arg", argument(n, *kw, sa.type())}, {"kind", 2}});
      } else if (!sa.kwarg_only() && i < n->args().size()) {
        inputs.push_back(
            Json{{"name", sa.name()}, {"arg", argument(n, n->args()[i], sa.type())}, {"kind", 1}});
      }
    }
    Json metadata = Json::object();
    if (auto st = n->stack_trace()) metadata["stack_trace"] = *st;
    return Json{{"target", n->target().str()},
                {"inputs", inputs},
                {"outputs", outputs(n, schema)},
                {"metadata", metadata},
                {"is_hop_single_tensor_return", nullptr},
                {"name", n->name()}};
  }

  const GraphModule& module_;
  const Graph& g_;
  bool symbolic_ = false;  // a dynamic capture's graph
  Json tensor_values_ = Json::object();
  Json sym_int_values_ = Json::object();
};

Json signature_json(const ExportGraphSignature& s) {
  Json ins = Json::array(), outs = Json::array();
  for (const auto& in : s.input_specs) {
    switch (in.kind) {
      case InputSpec::Kind::user_input:
        ins.push_back(Json{{"user_input", {{"arg", {{"as_tensor", {{"name", in.name}}}}}}}});
        break;
      case InputSpec::Kind::parameter:
        ins.push_back(Json{{"parameter", {{"arg", {{"name", in.name}}}, {"parameter_name", in.target}}}});
        break;
      case InputSpec::Kind::buffer:
        ins.push_back(Json{
            {"buffer",
             {{"arg", {{"name", in.name}}}, {"buffer_name", in.target}, {"persistent", in.persistent}}}});
        break;
      case InputSpec::Kind::constant_tensor:
        ins.push_back(
            Json{{"tensor_constant", {{"arg", {{"name", in.name}}}, {"tensor_constant_name", in.target}}}});
        break;
      default:
        throw Error("save_exported: input '" + in.name + "' is of a kind fxcpp does not write");
    }
  }
  for (const auto& out : s.output_specs) {
    const Json arg{{"name", out.name}};
    switch (out.kind) {
      case OutputSpec::Kind::user_output:
        outs.push_back(Json{{"user_output", {{"arg", {{"as_tensor", arg}}}}}});
        break;
      case OutputSpec::Kind::loss_output:
        outs.push_back(Json{{"loss_output", {{"arg", arg}}}});
        break;
      case OutputSpec::Kind::buffer_mutation:
        outs.push_back(Json{{"buffer_mutation", {{"arg", arg}, {"buffer_name", out.target}}}});
        break;
      case OutputSpec::Kind::parameter_mutation:
        outs.push_back(Json{{"parameter_mutation", {{"arg", arg}, {"parameter_name", out.target}}}});
        break;
      case OutputSpec::Kind::user_input_mutation:
        outs.push_back(Json{{"user_input_mutation", {{"arg", arg}, {"user_input_name", out.target}}}});
        break;
      default:
        throw Error("save_exported: output '" + out.name + "' is of a kind fxcpp does not write");
    }
  }
  return Json{{"input_specs", ins}, {"output_specs", outs}};
}

// The payload config and records of a state dict or the constants: each
// tensor's bytes, contiguous, in `<dir><prefix><i>`.
Json write_payloads(const StateDict& tensors, const std::string& dir, const char* prefix, bool params,
                    caffe2::serialize::PyTorchStreamWriter& writer, const std::set<std::string>& parameters) {
  Json config = Json::object();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [key, tensor] = tensors[i];
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const std::string path = std::string(prefix) + std::to_string(i);
    writer.writeRecord(dir + path, t.data_ptr(), t.nbytes());
    passes::TensorMetadata m = passes::extract_tensor_metadata(t);
    m.requires_grad = tensor.requires_grad();
    config[key] = Json{{"path_name", path},
                       {"is_param", params && parameters.count(key) > 0},
                       {"use_pickle", false},
                       {"tensor_meta", tensor_meta_json(m, tensor.device())}};
  }
  return Json{{"config", config}};
}

}  // namespace

void save_exported(const ExportedProgram& ep, const std::string& path) {
  // A loaded program's symbolic sizes are sympy text fxcpp does not check.
  for (const Node* n : ep.graph_module().graph().nodes())
    if (n->meta().contains("sym_sizes") && !n->meta().contains("tensor_meta"))
      refuse(n, "symbolic sizes of a loaded program: fxcpp writes those of its own captures only");
  Json graph = GraphWriter(ep.graph_module()).write();
  Json call_signature{{"inputs", Json::array()},
                      {"outputs", Json::array()},
                      {"in_spec", ep.in_spec()},
                      {"out_spec", ep.out_spec()},
                      {"forward_arg_names", Json::array()}};
  for (const auto& in : ep.graph_signature().input_specs)
    if (in.kind == InputSpec::Kind::user_input) call_signature["forward_arg_names"].push_back(in.name);
  Json ranges = Json::object();
  for (const auto& [symbol, r] : ep.range_constraints())
    ranges[symbol] = Json{{"min_val", r.min_val ? Json(*r.min_val) : Json(nullptr)},
                          {"max_val", r.max_val ? Json(*r.max_val) : Json(nullptr)}};
  const Json program{{"graph_module",
                      {{"graph", graph},
                       {"signature", signature_json(ep.graph_signature())},
                       {"module_call_graph", Json::array({Json{{"fqn", ""}, {"signature", call_signature}}})},
                       {"metadata", Json::object()},
                       {"treespec_namedtuple_fields", Json::object()}}},
                     {"opset_version", {{"aten", 10}}},
                     {"range_constraints", ranges},
                     {"schema_version", {{"major", 8}, {"minor", 20}}},
                     {"verifiers", Json::array({"TRAINING"})},
                     {"torch_version", TORCH_VERSION},
                     {"guards_code", Json::array()}};
  const std::string model = program.dump();

  std::set<std::string> parameters;
  for (const auto& in : ep.graph_signature().input_specs)
    if (in.kind == InputSpec::Kind::parameter) parameters.insert(in.target);
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error("save_exported: cannot open " + path + " for writing (is the folder writable?)");
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) -> size_t {
      file.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
      return file ? n : 0;
    });
    const Json weights =
        write_payloads(ep.state_dict(), "data/weights/", "weight_", true, writer, parameters);
    const Json constants =
        write_payloads(ep.constants(), "data/constants/", "tensor_", false, writer, parameters);
    const std::string weights_text = weights.dump(), constants_text = constants.dump();
    writer.writeRecord("data/weights/model_weights_config.json", weights_text.data(), weights_text.size());
    writer.writeRecord("data/constants/model_constants_config.json", constants_text.data(),
                       constants_text.size());
    writer.writeRecord("models/model.json", model.data(), model.size());
    // torch.export.load reads this record; empty means no example inputs.
    writer.writeRecord("data/sample_inputs/model.pt", "", 0);
    writer.writeRecord("archive_format", "pt2", 3);
    writer.writeRecord("archive_version", "0", 1);
    writer.writeRecord("byteorder", "little", 6);
    writer.writeEndOfFile();
  } catch (const c10::Error& e) {
    throw Error("save_exported: writing " + path + " failed (disk full?): " + e.what_without_backtrace());
  }
  if (!file.flush()) throw Error("save_exported: writing " + path + " failed (disk full?)");
}

}  // namespace fx
