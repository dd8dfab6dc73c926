// Transformer: the Interpreter run on Proxies of a tracer (torch/fx/interpreter.py).
#include <fx/transformer.h>

namespace fx {

namespace {

// torch.fx's TransformerTracer: the original graph already chose which
// modules are leaves, so every module stays one.
class TransformerTracer final : public Tracer {
 public:
  bool is_leaf_module(const Module&, std::string_view) const override { return true; }
};

// What the tracer traces. It shares the GraphModule's attributes, so the
// tracer finds module paths and parameters by identity and names new tensor
// constants apart from existing ones, as torch.fx's tracer whose root is the
// module. forward has no parameters: placeholder() makes the placeholders.
class TransformRoot final : public Module {
 public:
  TransformRoot(GraphModule& gm, Transformer& transformer)
      : Module(gm.type_name(), {}), transformer_(transformer) {
    train(gm.is_training());  // before the children: only this module's flag
    for (const auto& c : gm.named_children()) register_module(c.key(), c.value());
    for (const auto& p : gm.named_parameters(false))
      register_parameter(p.key(), p.value(), p.value().defined() && p.value().requires_grad());
    for (const auto& b : gm.named_buffers(false)) register_buffer(b.key(), b.value());
    for (const auto& [name, t] : gm.attributes()) register_attribute(name, t);
  }
  Value forward(const std::vector<Value>&) override { return transformer_.run({}); }

 private:
  Transformer& transformer_;
};

}  // namespace

Transformer::Transformer(GraphModule& module, std::unique_ptr<Tracer> tracer)
    : Interpreter(module), tracer_(tracer ? std::move(tracer) : std::make_unique<TransformerTracer>()) {}

Graph& Transformer::new_graph() {
  if (!transforming_) throw Error("Transformer::new_graph: the new graph exists only while transform() runs");
  return tracer_->graph();
}

std::unique_ptr<GraphModule> Transformer::transform() {
  if (transforming_) throw Error("Transformer::transform: already transforming; transform() cannot nest");
  TransformRoot root(module(), *this);
  struct Flag {
    bool& f;
    explicit Flag(bool& flag) : f(flag) { f = true; }
    ~Flag() { f = false; }
  };
  std::unique_ptr<Graph> graph;
  {
    Flag on(transforming_);
    graph = tracer_->trace(root);
  }
  // Same inputs and output, so the same structure around them (torch.fx
  // gives the new graph the original's codegen).
  graph->set_pytree_info(module().graph().pytree_info());
  // Tensor constants the rewrite created were stored on `root`: the new
  // module takes them from there with everything else it uses.
  return std::make_unique<GraphModule>(root, std::move(graph));
}

Value Transformer::placeholder(Target target, const std::vector<Value>& args, const ValueKwargs&) {
  std::optional<Argument> default_value;
  if (!args.empty()) default_value = tracer_->create_arg(args[0]);
  return Value::proxy(new_graph().placeholder(target.str(), std::move(default_value)), tracer_.get());
}

Value Transformer::get_attr(Target target, const std::vector<Value>&, const ValueKwargs&) {
  // One node per original node (not the tracer's per-parameter cache), as
  // torch.fx's Transformer makes them.
  return tracer_->create_proxy(Op::get_attr, target, {}, {});
}

Value Transformer::call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  // Recorded, not run: a wrapped function stays one node.
  return tracer_->create_proxy(Op::call_function, target, args, kwargs);
}

Value Transformer::call_method(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  if (args.empty()) throw Error("Transformer: call_method " + target.str() + " has no self argument");
  return tracer_->create_proxy(Op::call_method, target, args, kwargs);
}

Value Transformer::call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) {
  auto* m = dynamic_cast<Module*>(module().get_submodule(target.str()));
  if (!m)
    throw Error("Transformer: call_module target '" + target.str() + "' is not an fx::Module of the " +
                module().type_name() + " being transformed");
  // The tracer's leaf policy decides: one call_module node, or m's forward traced through.
  return tracer_->call_module(
      *m, [&] { return m->forward(m->bind(args, kwargs)); }, args, kwargs);
}

}  // namespace fx
