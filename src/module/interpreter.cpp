#include <fx/graph_module.h>
#include <fx/interpreter.h>
#include <fx/tracer.h>

#include "../runtime/module_ivalue.h"

namespace fx {

Interpreter::Interpreter(GraphModule& module, bool garbage_collect_values)
    : module_(module), garbage_collect_(garbage_collect_values) {}

Value Interpreter::load_arg(const Argument& a) const {
  if (Node* n = a.node()) {
    auto it = env.find(n);
    if (it == env.end()) throw Error("interpreter: node '" + n->name() + "' is used before it has a value");
    return it->second;
  }
  const auto& s = a.storage();
  auto items = [&](const std::vector<Argument>& xs) {
    std::vector<Value> out;
    out.reserve(xs.size());
    for (const auto& x : xs) out.push_back(load_arg(x));
    return out;
  };
  if (const auto* t = std::get_if<Tuple>(&s)) return Value::tuple(items(t->items));
  if (const auto* l = std::get_if<List>(&s)) return Value::list(items(l->items));
  if (const auto* sl = std::get_if<Slice>(&s)) {
    auto parts = items(sl->parts);
    return Value::slice(parts[0], parts[1], parts[2]);
  }
  if (const auto* d = std::get_if<Dict>(&s)) {
    // A dict of node values (a training step's gradients by path, a
    // forward returning {'logits': y}): each value loaded, keys kept.
    bool has_node = false;
    for (const auto& kv : d->items) for_each_node(kv.second, [&](Node*) { has_node = true; });
    if (has_node) {
      std::vector<std::pair<std::string, Value>> out;
      out.reserve(d->items.size());
      for (const auto& [key, value] : d->items) out.emplace_back(key, load_arg(value));
      return Value::dict(std::move(out));
    }
  }
  if (a.is<EllipsisType>() || a.is<c10::ScalarType>() || a.is<c10::Layout>() || a.is<c10::MemoryFormat>()) {
    if (a.is<EllipsisType>()) return Value(Ellipsis);
    if (a.is<c10::ScalarType>()) return Value(a.get<c10::ScalarType>());
    if (a.is<c10::Layout>()) return Value(a.get<c10::Layout>());
    return Value(a.get<c10::MemoryFormat>());
  }
  return Value(to_ivalue(a));
}

std::pair<std::vector<Value>, ValueKwargs> Interpreter::fetch_args_kwargs_from_env(const Node* n) const {
  std::vector<Value> args;
  args.reserve(n->args().size());
  for (const auto& a : n->args()) args.push_back(load_arg(a));
  ValueKwargs kwargs;
  kwargs.reserve(n->kwargs().size());
  for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, load_arg(v));
  return {std::move(args), std::move(kwargs)};
}

Value Interpreter::fetch_attr(std::string_view target) const {
  // A whole submodule (cond's branches) is a value too, as in the execution plan GraphModule runs.
  if (auto* sub = dynamic_cast<Module*>(module_.get_submodule(target)))
    return Value(runtime::module_ivalue(std::shared_ptr<Module>(sub->shared_from_this(), sub)));
  return Value(module_.get_tensor(target));
}

Value Interpreter::run(std::vector<Value> args) {
  env.clear();
  symbolic_ = false;
  for (const auto& a : args) symbolic_ = symbolic_ || a.has_proxy();
  pending_args_ = std::move(args);
  next_arg_ = 0;
  const Graph& g = module_.graph();
  const std::vector<Node*> order = g.nodes().to_vector();
  Graph::LastUses dies_at;
  if (garbage_collect_) dies_at = g.last_uses(order);
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    Value v = run_node_naming_it(n);
    if (n->op() == Op::output) return v;
    env[n] = std::move(v);
    if (garbage_collect_)
      for (const Node* dead : dies_at[i]) env.erase(dead);
  }
  throw Error("interpreter: the graph has no output node");
}

// torch.fx's run adds "While executing <node>" to any error; a TraceError
// stays one, so data-dependent control flow is still recognisable.
Value Interpreter::run_node_naming_it(Node* n) {
  try {
    return run_node(n);
  } catch (const TraceError& e) {
    throw TraceError(std::string(e.what()) + "\n\nWhile executing " + n->format_node());
  } catch (const std::exception& e) {
    throw Error(std::string(e.what()) + "\n\nWhile executing " + n->format_node());
  }
}

Value Interpreter::run_node(Node* n) {
  auto [args, kwargs] = fetch_args_kwargs_from_env(n);
  switch (n->op()) {
    case Op::placeholder:
      return placeholder(n->target(), args, kwargs);
    case Op::get_attr:
      return get_attr(n->target(), args, kwargs);
    case Op::call_function:
      return call_function(n->target(), args, kwargs);
    case Op::call_method:
      return call_method(n->target(), args, kwargs);
    case Op::call_module:
      return call_module(n->target(), args, kwargs);
    case Op::output:
      return output(n->target(), args, kwargs);
  }
  throw Error("interpreter: unknown opcode");
}

Value Interpreter::placeholder(Target target, const std::vector<Value>& args, const ValueKwargs&) {
  const std::string& name = target.str();
  if (!name.empty() && name[0] == '*') {  // *args takes the rest
    std::vector<Value> rest(pending_args_.begin() + static_cast<std::ptrdiff_t>(next_arg_),
                            pending_args_.end());
    next_arg_ = pending_args_.size();
    return Value::tuple(std::move(rest));
  }
  if (next_arg_ < pending_args_.size()) return pending_args_[next_arg_++];
  if (!args.empty()) return args[0];
  throw Error("interpreter: expected a positional argument for parameter '" + name + "', but none was given");
}

Value Interpreter::get_attr(Target target, const std::vector<Value>&, const ValueKwargs&) {
  Value v = fetch_attr(target.str());
  // Retracing: record the attribute where the graph reads it, as FX's
  // generated `x = self.attr` line does.
  Tracer* t = symbolic_ ? Tracer::current() : nullptr;
  if (t) return Value::proxy(t->create_arg(v).node(), t);
  return v;
}

Value Interpreter::call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  return fx::call_function(target, args, kwargs);
}

Value Interpreter::call_method(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  if (args.empty()) throw Error("interpreter: call_method " + target.str() + " has no self argument");
  std::vector<Value> rest(args.begin() + 1, args.end());
  return args[0].call_method(target.str(), std::move(rest), kwargs);
}

Value Interpreter::call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  auto* m = dynamic_cast<Module*>(module_.get_submodule(target.str()));
  if (!m) throw Error("interpreter: call_module target '" + target.str() + "' is not an fx::Module");
  return m->call(args, kwargs);
}

Value Interpreter::output(Target, const std::vector<Value>& args, const ValueKwargs&) {
  if (args.empty()) throw Error("interpreter: the output node has no value");
  return args[0];
}

}  // namespace fx
