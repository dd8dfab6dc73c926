// Symbolic tracing with torch.fx's semantics (torch/fx/_symbolic_trace.py).
#include <fx/node.h>
#include <fx/pytree.h>
#include <fx/runtime.h>
#include <fx/tracer.h>

#include "../ir/repr.h"
#include "../module/module_dicts.h"
#include "../module/module_paths.h"
#include "stack_trace.h"
#include "tree_node.h"

#include <algorithm>

namespace fx {

namespace {
thread_local Tracer* current_tracer = nullptr;

// Makes `t` the current tracer for its lifetime.
class CurrentTracer {
 public:
  explicit CurrentTracer(Tracer* t) : saved_(current_tracer) { current_tracer = t; }
  ~CurrentTracer() { current_tracer = saved_; }
  CurrentTracer(const CurrentTracer&) = delete;
  CurrentTracer& operator=(const CurrentTracer&) = delete;

 private:
  Tracer* saved_;
};

const void* identity(const at::Tensor& t) { return t.unsafeGetTensorImpl(); }
}  // namespace

Tracer::Tracer() = default;
Tracer::~Tracer() = default;

Tracer* Tracer::current() { return current_tracer; }

std::unique_ptr<Graph> Tracer::trace(Module& root, const ConcreteArgs& concrete_args) {
  graph_ = std::make_unique<Graph>();
  root_ = &root;
  tensors_indexed_ = false;
  param_names_.clear();
  buffer_names_.clear();
  param_proxies_.clear();
  constant_names_.clear();
  next_constant_ = 0;
  module_paths_ = std::make_unique<detail::ModulePaths>(root);
  graph_->reserve(module_paths_->size());  // a model of many modules calls most of them

  const auto& params = root.forward_params();
  for (const auto& [name, arg] : concrete_args) {
    bool known = false;
    for (const auto& p : params) known = known || p.name == name;
    if (!known) {
      std::string names;
      for (const auto& p : params) names += (names.empty() ? "" : ", ") + p.name;
      throw TraceError("concrete_args names '" + name + "', which is not a parameter of " + root.type_name() +
                       ".forward(" + names + ")");
    }
  }

  CurrentTracer scope(this);
  std::vector<Value> args;
  PyTreeInfo pytree{{"self"}, TreeSpec{TreeSpec::Kind::tuple, {}, {}}, std::nullopt};
  bool structured = false;
  for (const auto& p : params) {
    pytree.orig_args.push_back(p.name);
    TreeSpec& spec = pytree.in_spec.children.emplace_back();
    auto given = std::find_if(concrete_args.begin(), concrete_args.end(),
                              [&](const auto& kv) { return kv.first == p.name; });
    if (given != concrete_args.end()) {
      int count = 0;
      args.push_back(concrete_placeholder(p, given->second, count, spec));
      structured = structured || !spec.is_leaf();
      continue;
    }
    Args defaults;
    if (p.default_value) defaults.push_back(create_arg(*p.default_value));
    args.push_back(Value::proxy(create_node(Op::placeholder, Target(p.name), std::move(defaults), {},
                                            std::nullopt, root.annotation(p.name)),
                                this));
  }
  Value out = root.forward(args);
  if (structured) {
    // As torch.fx's flatten_fn: the graph returns the output's leaves as a
    // list; the module rebuilds the structure (out_spec).
    auto [leaves, out_spec] = tree_flatten(out);
    pytree.out_spec = std::move(out_spec);
    out = Value::list(std::move(leaves));
    graph_->set_pytree_info(std::move(pytree));
  }
  create_node(Op::output, Target("output"), {create_arg(out)}, {}, std::nullopt, root.annotation("return"));
  root_ = nullptr;
  return std::move(graph_);
}

// named_parameters(), named_buffers() and the tensor attributes (FX's
// collect_tensor_attrs), by identity: the first name of a tensor reached twice.
void Tracer::index_tensors() {
  if (tensors_indexed_) return;
  if (!root_) throw TraceError("this tracer is not tracing; a tensor cannot be recorded as a graph argument");
  tensors_indexed_ = true;
  module_paths_->for_each([&](std::string_view prefix, const torch::nn::Module& m) {
    auto qualified = [&](const std::string& name) {
      return prefix.empty() ? name : std::string(prefix) + "." + name;
    };
    for (const auto& p : detail::parameters_of(m))
      if (p.value().defined()) param_names_.emplace(identity(p.value()), qualified(p.key()));
    for (const auto& b : detail::buffers_of(m))
      if (b.value().defined()) buffer_names_.emplace(identity(b.value()), qualified(b.key()));
    if (const auto* fm = dynamic_cast<const Module*>(&m))
      for (const auto& [name, t] : fm->attributes()) constant_names_.emplace(identity(t), qualified(name));
  });
}

// torch.fx's create_args_for_root.proxy_placeholder for a parameter named
// in concrete_args: one placeholder per leaf, named `<param>_<count>`.
Value Tracer::concrete_placeholder(const Module::Param& param, const ConcreteArg& arg, int& count,
                                   TreeSpec& spec) {
  const Value& given = arg.value_;
  if (arg.kind_ != TreeSpec::Kind::leaf ||
      (!arg.ph_ && (given.is_list() || given.is_tuple() || given.is_dict()))) {
    std::vector<ConcreteArg> items = arg.items_;
    spec.kind = arg.kind_;
    spec.keys = arg.keys_;
    if (arg.kind_ == TreeSpec::Kind::leaf) {
      spec.kind = given.is_list()    ? TreeSpec::Kind::list
                  : given.is_tuple() ? TreeSpec::Kind::tuple
                                     : TreeSpec::Kind::dict;
      if (spec.kind == TreeSpec::Kind::dict) spec.keys = given.keys();
      for (const Value& v : given.items()) items.emplace_back(v);
    }
    std::vector<Value> values;
    spec.children.resize(items.size());
    for (size_t i = 0; i < items.size(); ++i)
      values.push_back(concrete_placeholder(param, items[i], count, spec.children[i]));
    return detail::container_of(spec, std::move(values));
  }
  spec = TreeSpec::leaf();
  Args defaults;
  if (param.default_value) defaults.push_back(create_arg(*param.default_value));
  std::string name = param.name + "_" + std::to_string(++count);
  Value out = Value::proxy(create_node(Op::placeholder, Target(name), std::move(defaults), {}), this);
  if (arg.ph_) return out;
  const Value& x = arg.value_;
  if (x.is_none()) {
    create_proxy(Op::call_function, Target("torch.fx._symbolic_trace._assert_is_none"),
                 {out, param.name + " has been specialized to have value None but got another value"}, {});
    return x;
  }
  c10::IValue iv = x.ivalue();
  std::string shown;  // Python's str(x)
  if (iv.isBool())
    shown = iv.toBool() ? "True" : "False";
  else if (iv.isInt())
    shown = std::to_string(iv.toInt());
  else if (iv.isDouble())
    shown = detail::repr_float(iv.toDouble());
  else if (iv.isString())
    shown = iv.toStringRef();
  else
    return x;  // torch.fx only warns that it cannot guard other values
  create_proxy(
      Op::call_function, Target("torch._assert"),
      {out == x, param.name + " has been specialized to have value " + shown + " but got another value"}, {});
  return x;
}

bool Tracer::is_leaf_module(const Module& m, std::string_view /*qualified_name*/) const {
  return m.is_standard_leaf();
}

Value Tracer::call_module(Module& m, const std::function<Value()>& forward, const std::vector<Value>& args,
                          const ValueKwargs& kwargs) {
  std::string path = path_of_module(m);
  if (!is_leaf_module(m, path)) return forward();
  return create_proxy(Op::call_module, module_target(m, path), args, kwargs);
}

// The target for `path`, through the module's memo: reading the memo's
// entry costs nothing extra (the node's name comes from it), where the
// global table's slot is a cache miss per module in a large model.
Target Tracer::module_target(const Module& m, std::string_view path) {
  auto& memo = m.traced_target_.entry;
  const detail::TargetEntry* known = memo.load(std::memory_order_relaxed);
  if (known && Target(known).str() == path) return Target(known);
  Target target(path);
  memo.store(target.entry(), std::memory_order_relaxed);
  return target;
}

std::string Tracer::path_of_module(const Module& m) const {
  if (&m == root_) return "";
  std::optional<std::string_view> path;
  if (module_paths_) path = module_paths_->find(&m);
  if (!path)
    throw TraceError("a " + m.type_name() + " module called while tracing is not a submodule of the traced " +
                     (root_ ? root_->type_name() : std::string("module")) +
                     "; register it with register_module so the graph can refer to it");
  return std::string(*path);
}

bool Tracer::holds_parameter(const Value& v) {
  if (!root_) return false;
  if (const auto* seq = std::get_if<std::shared_ptr<const Value::Seq>>(&v.v_)) {
    for (const auto& item : (*seq)->items)
      if (holds_parameter(item)) return true;
    return false;
  }
  const auto* iv = std::get_if<c10::IValue>(&v.v_);
  if (!iv || !iv->isTensor() || !iv->toTensor().defined()) return false;
  index_tensors();
  return param_names_.count(identity(iv->toTensor())) > 0;
}

Value Tracer::getattr(std::string_view qualified_name, const at::Tensor& value) {
  auto it = param_proxies_.find(identity(value));
  if (it != param_proxies_.end()) return it->second;
  Value proxy = create_proxy(Op::get_attr, Target(qualified_name), {}, {});
  param_proxies_.emplace(identity(value), proxy);
  return proxy;
}

Argument Tracer::create_arg(const Value& v) {
  if (v.is_proxy()) {
    if (v.tracer() != this)
      throw TraceError("node '" + v.node()->name() +
                       "' belongs to another trace and cannot be used in this one");
    return v.node();
  }
  if (const auto* a = std::get_if<Argument>(&v.v_)) return *a;
  if (const auto* seq = std::get_if<std::shared_ptr<const Value::Seq>>(&v.v_)) {
    std::vector<Argument> items;
    items.reserve((*seq)->items.size());
    for (const auto& item : (*seq)->items) items.push_back(create_arg(item));
    switch ((*seq)->kind) {
      case Value::SeqKind::list:
        return List{std::move(items)};
      case Value::SeqKind::tuple:
        return Tuple{std::move(items)};
      case Value::SeqKind::slice:
        return Slice{std::move(items)};
      case Value::SeqKind::dict: {
        Dict d;
        for (size_t i = 0; i < items.size(); ++i) d.items.emplace_back((*seq)->keys[i], std::move(items[i]));
        return d;
      }
    }
  }
  const c10::IValue& iv = std::get<c10::IValue>(v.v_);
  if (iv.isNone()) return None;
  if (iv.isBool()) return iv.toBool();
  if (iv.isInt()) return iv.toInt();
  if (iv.isDouble()) return iv.toDouble();
  if (iv.isString()) return iv.toStringRef();
  if (iv.isDevice()) return iv.toDevice();
  if (auto d = dtype_of(iv)) return *d;
  if (iv.isTensor()) {
    index_tensors();
    const at::Tensor& t = iv.toTensor();
    if (auto p = param_names_.find(identity(t)); p != param_names_.end()) return getattr(p->second, t).node();
    if (auto b = buffer_names_.find(identity(t)); b != buffer_names_.end())
      return create_node(Op::get_attr, Target(b->second), {}, {});
    // Another tensor: stored on the side as `_tensor_constantN` (one name per
    // tensor, a get_attr node per use), as torch.fx does.
    auto c = constant_names_.find(identity(t));
    if (c == constant_names_.end()) {
      // The first free `_tensor_constantN`, as torch.fx's hasattr loop finds
      // it. The root only gains names while tracing, so the search goes on
      // from the last name taken: linear in the number of constants.
      std::string name;
      for (;; ++next_constant_) {
        name = "_tensor_constant" + std::to_string(next_constant_);
        if (!detail::has_member(*root_, name) && !root_->attribute(name)) break;
      }
      // Stored on the root, as torch.fx does, so a GraphModule finds it there.
      root_->register_attribute(name, t);
      c = constant_names_.emplace(identity(t), name).first;
    }
    return create_node(Op::get_attr, Target(c->second), {}, {});
  }
  if (iv.isTuple() || iv.isList()) {
    std::vector<Argument> items;
    for (const auto& e : v.items()) items.push_back(create_arg(e));
    if (iv.isTuple()) return Tuple{std::move(items)};
    return List{std::move(items)};
  }
  if (iv.isGenericDict()) {
    Dict d;
    for (const auto& kv : iv.toGenericDict()) {
      if (!kv.key().isString())
        throw TraceError("a dict with " + python_type_name(kv.key()) +
                         " keys cannot be recorded as a graph argument; fxcpp's dicts have str keys");
      d.items.emplace_back(kv.key().toStringRef(), create_arg(Value(kv.value())));
    }
    return d;
  }
  throw TraceError("a value of type " + python_type_name(iv) +
                   " cannot be recorded as a graph argument; make it an attribute of the module");
}

Graph& Tracer::graph() {
  if (!graph_) throw TraceError("this tracer is not tracing: it has a graph only while trace() runs");
  return *graph_;
}

Node* Tracer::create_node(Op op, Target target, Args args, Kwargs kwargs, std::optional<std::string> name,
                          std::optional<std::string> type) {
  if (!graph_)
    throw TraceError("this tracer is not tracing; values of a finished trace cannot record operations");
  Node* n =
      graph_->create_node(op, target, std::move(args), std::move(kwargs), std::move(name), std::move(type));
  if (record_stack_traces) n->set_stack_trace(detail::user_stack_trace());
  return n;
}

Value Tracer::create_proxy(Op op, Target target, const std::vector<Value>& args, const ValueKwargs& kwargs,
                           std::optional<std::string> name) {
  Args node_args;
  node_args.reserve(args.size());
  for (const auto& a : args) node_args.push_back(create_arg(a));
  Kwargs node_kwargs;
  node_kwargs.reserve(kwargs.size());
  for (const auto& [k, v] : kwargs) node_kwargs.emplace_back(k, create_arg(v));
  return Value::proxy(create_node(op, target, std::move(node_args), std::move(node_kwargs), std::move(name)),
                      this);
}

std::unique_ptr<Graph> symbolic_trace_graph(Module& root, const ConcreteArgs& concrete_args) {
  return Tracer().trace(root, concrete_args);
}

}  // namespace fx
