// ShapeProp and TensorMetadata, as torch/fx/passes/shape_prop.py (torch.fx 2.14).
#include <fx/graph_module.h>
#include <fx/passes/shape_prop.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>

#include <ostream>

#include "../ir/repr.h"

namespace fx::passes {

namespace {

std::string repr_qscheme(c10::QScheme q) { return "torch." + c10::toString(q); }

// A Python float list, or an int list when `as_int`.
std::string number_list(const std::vector<double>& v, bool as_int) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += as_int ? std::to_string(static_cast<int64_t>(v[i])) : fx::detail::repr_float(v[i]);
  }
  return out + "]";
}

std::string repr_qparams(const std::optional<QParams>& q) {
  if (!q) return "{}";
  bool int_zero_point = q->qscheme != c10::kPerChannelAffineFloatQParams;
  std::string out = "{'qscheme': " + repr_qscheme(q->qscheme) + ", 'scale': ";
  if (q->per_channel()) {
    out += number_list(q->scale, false) + ", 'zero_point': " + number_list(q->zero_point, int_zero_point);
    out += ", 'axis': " + std::to_string(*q->axis);
  } else {
    out += fx::detail::repr_float(q->scale.at(0)) +
           ", 'zero_point': " + std::to_string(static_cast<int64_t>(q->zero_point.at(0)));
  }
  return out + "}";
}

std::vector<double> to_doubles(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// FX's map_aggregate over the value with _extract_tensor_metadata at the
// leaves; sets *found when a tensor was met.
TensorMetadataTree tree_of(const c10::IValue& v, bool* found) {
  TensorMetadataTree t;
  // An undefined tensor (a result that an output mask left out, as
  // convolution_backward's bias gradient) is Python's None.
  if (v.isTensor() && !v.toTensor().defined()) {
    t.kind = TensorMetadataTree::Kind::other;
    t.other = "None";
  } else if (v.isTensor()) {
    *found = true;
    t.kind = TensorMetadataTree::Kind::tensor;
    t.tensor = extract_tensor_metadata(v.toTensor());
  } else if (v.isTuple() || v.isList()) {
    t.kind = v.isTuple() ? TensorMetadataTree::Kind::tuple : TensorMetadataTree::Kind::list;
    const auto items = v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    t.items.reserve(items.size());
    for (const auto& item : items) t.items.push_back(tree_of(item, found));
  } else if (v.isGenericDict()) {
    t.kind = TensorMetadataTree::Kind::dict;
    for (const auto& kv : v.toGenericDict()) {
      t.keys.push_back(kv.key().isString() ? fx::detail::repr_string(kv.key().toStringRef())
                       : kv.key().isInt()  ? std::to_string(kv.key().toInt())
                                           : "<" + python_type_name(kv.key()) + ">");
      t.items.push_back(tree_of(kv.value(), found));
    }
  } else {
    t.kind = TensorMetadataTree::Kind::other;
    if (v.isNone()) {
      t.other = "None";
    } else if (v.isBool()) {
      t.other = v.toBool() ? "True" : "False";
    } else if (v.isInt()) {
      t.other = std::to_string(v.toInt());
    } else if (v.isDouble()) {
      t.other = fx::detail::repr_float(v.toDouble());
    } else if (v.isString()) {
      t.other = fx::detail::repr_string(v.toStringRef());
    } else if (auto d = dtype_of(v)) {
      t.other = fx::detail::repr_dtype(*d);
    } else {
      t.other = "<" + python_type_name(v) + ">";
    }
  }
  return t;
}

// What FX's `type(result)` names. The runtime keeps torch.Size and
// torch.layout as int lists and ints, so they are recognised by the node
// that makes them.
std::string python_type(const Node& n, const Value& v) {
  if (v.is_tuple()) return "tuple";
  const auto* attr = n.args().size() == 2 ? &n.args()[1] : nullptr;
  if (n.op() == Op::call_function && n.target() == "builtins.getattr" && attr && attr->is<std::string>()) {
    const std::string& name = attr->get<std::string>();
    if (name == "shape") return "torch.Size";
    if (name == "layout") return "torch.layout";
  }
  if (n.op() == Op::call_method && n.target() == "size" && n.args().size() == 1 && n.kwargs().empty())
    return "torch.Size";
  if (v.is_list()) return "list";
  c10::IValue iv = v.ivalue();
  if (iv.isDouble()) return "float";
  if (iv.isString()) return "str";
  if (iv.isDevice()) return "torch.device";
  if (dtype_of(iv)) return "torch.dtype";
  return python_type_name(iv);
}

// Python's repr of the meta dict, for the error message. Values fxcpp does
// not know how to print show as <...>.
std::string repr_meta(const Meta& meta) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : meta) {
    if (!first) out += ", ";
    first = false;
    out += fx::detail::repr_string(key) + ": ";
    if (const auto* s = std::any_cast<std::string>(&value))
      out += fx::detail::repr_string(*s);
    else if (const auto* tm = std::any_cast<TensorMetadata>(&value))
      out += tm->repr();
    else if (const auto* tree = std::any_cast<TensorMetadataTree>(&value))
      out += tree->repr();
    else
      out += "<...>";
  }
  return out + "}";
}

}  // namespace

std::string TensorMetadata::repr() const {
  std::string out = "TensorMetadata(shape=torch.Size([";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  out += "]), dtype=" + fx::detail::repr_dtype(dtype);
  out += ", requires_grad=";
  out += requires_grad ? "True" : "False";
  out += ", stride=" + fx::detail::repr_int_tuple(stride);
  out += ", memory_format=" + (memory_format ? fx::detail::repr_memory_format(*memory_format) : "None");
  out += ", is_quantized=";
  out += is_quantized ? "True" : "False";
  return out + ", qparams=" + repr_qparams(qparams) + ")";
}

std::string TensorMetadataTree::repr() const {
  auto join = [&](const char* open, const char* close, bool dict) {
    std::string out = open;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      if (dict) out += keys[i] + ": ";
      out += items[i].repr();
    }
    if (kind == Kind::tuple && items.size() == 1) out += ',';
    return out + close;
  };
  switch (kind) {
    case Kind::tensor:
      return tensor.repr();
    case Kind::tuple:
      return join("(", ")", false);
    case Kind::list:
      return join("[", "]", false);
    case Kind::dict:
      return join("{", "}", true);
    case Kind::other:
      break;
  }
  return other;
}

std::ostream& operator<<(std::ostream& os, const TensorMetadata& m) { return os << m.repr(); }
std::ostream& operator<<(std::ostream& os, const TensorMetadataTree& t) { return os << t.repr(); }

TensorMetadata extract_tensor_metadata(const at::Tensor& t) {
  TensorMetadata m;
  m.shape = t.sizes().vec();
  m.dtype = t.scalar_type();
  m.requires_grad = t.requires_grad();
  m.stride = t.strides().vec();
  // FX iterates a Python set of the three formats, whose order depends on
  // object addresses; fxcpp asks in the order the source lists them.
  for (auto f :
       {c10::MemoryFormat::Contiguous, c10::MemoryFormat::ChannelsLast, c10::MemoryFormat::ChannelsLast3d})
    if (t.is_contiguous(f)) {
      m.memory_format = f;
      break;
    }
  m.is_quantized = t.is_quantized();
  if (m.is_quantized) {
    QParams q;
    q.qscheme = t.qscheme();
    if (q.qscheme == c10::kPerTensorAffine || q.qscheme == c10::kPerTensorSymmetric) {
      q.scale = {t.q_scale()};
      q.zero_point = {static_cast<double>(t.q_zero_point())};
    } else {
      q.scale = to_doubles(t.q_per_channel_scales());
      q.zero_point = to_doubles(t.q_per_channel_zero_points());
      q.axis = t.q_per_channel_axis();
    }
    m.qparams = std::move(q);
  }
  return m;
}

ShapeProp::ShapeProp(GraphModule& module) : Interpreter(module) {}

// A get_attr of a parameter gives an nn.Parameter in FX. The module's
// parameters are gathered once, at the first get_attr.
bool ShapeProp::is_parameter(const at::Tensor& t) {
  if (!parameters_) {
    parameters_.emplace();
    for (const auto& p : module().named_parameters(/*recurse=*/true))
      parameters_->insert(p.value().unsafeGetTensorImpl());
  }
  return parameters_->count(t.unsafeGetTensorImpl()) > 0;
}

Value ShapeProp::propagate(std::vector<Value> inputs) {
  size_t placeholders = 0;
  bool varargs = false;
  std::string names;
  for (Node* n : module().graph().nodes()) {
    if (n->op() != Op::placeholder) continue;
    ++placeholders;
    varargs = varargs || n->target().str().starts_with("*");
    names += (names.empty() ? "" : ", ") + n->target().str();
  }
  if (!varargs && inputs.size() > placeholders)
    throw Error("ShapeProp.propagate: got " + std::to_string(inputs.size()) +
                " inputs, but the graph takes " + std::to_string(placeholders) + " (" + names +
                "); pass one example value per placeholder");
  return run(std::move(inputs));
}

Value ShapeProp::run_node(Node* n) {
  Value result;
  try {
    result = Interpreter::run_node(n);
  } catch (const std::exception& e) {
    throw Error("ShapeProp error for: node=" + n->format_node() + " with meta=" + repr_meta(n->meta()) +
                "\n\n" + e.what());
  }
  // A symbolic value (retracing through ShapeProp) has no shape to record.
  if (result.has_proxy()) return result;
  c10::IValue iv = result.ivalue();
  if (iv.isTensor() && !iv.toTensor().defined()) {  // None, as tree_of says
    n->meta().set("type", std::string("NoneType"));
    return result;
  }
  if (iv.isTensor()) {  // the common case, without the tree
    const at::Tensor& t = iv.toTensor();
    n->meta().set("tensor_meta", extract_tensor_metadata(t));
    bool param = n->op() == Op::get_attr && is_parameter(t);
    n->meta().set("type", std::string(param ? "torch.nn.parameter.Parameter" : "torch.Tensor"));
    return result;
  }
  bool found = false;
  TensorMetadataTree tree = tree_of(iv, &found);
  if (found) n->meta().set("tensor_meta", std::move(tree));
  n->meta().set("type", python_type(*n, result));
  return result;
}

}  // namespace fx::passes
