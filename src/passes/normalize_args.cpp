// NormalizeArgs: torch/fx/experimental/normalize.py (torch.fx 2.14).
#include <fx/passes/normalize_args.h>

namespace fx::passes {

NormalizeArgs::NormalizeArgs(GraphModule& module, bool normalize_to_only_use_kwargs)
    : Transformer(module), normalize_to_only_use_kwargs_(normalize_to_only_use_kwargs) {}

std::vector<Value> NormalizeArgs::load_all(const Args& args) const {
  std::vector<Value> out;
  out.reserve(args.size());
  for (const Argument& a : args) out.push_back(load_arg(a));
  return out;
}

ValueKwargs NormalizeArgs::load_all(const Kwargs& kwargs) const {
  ValueKwargs out;
  out.reserve(kwargs.size());
  for (const auto& [k, v] : kwargs) out.emplace_back(k, load_arg(v));
  return out;
}

Value NormalizeArgs::run_node(Node* n) {
  // Normalized from the node's own arguments (constants and nodes), then
  // loaded: the new node reads the values the old one read.
  std::optional<ArgsKwargsPair> normalized;
  if (n->op() == Op::call_function)
    normalized = normalize_function(n->target(), n->args(), n->kwargs(), normalize_to_only_use_kwargs_);
  else if (n->op() == Op::call_module)
    normalized =
        normalize_module(module(), n->target().str(), n->args(), n->kwargs(), normalize_to_only_use_kwargs_);
  Value out;
  if (!normalized)
    out = Transformer::run_node(n);
  else if (n->op() == Op::call_function)
    out = tracer().create_proxy(Op::call_function, n->target(), load_all(normalized->args),
                                load_all(normalized->kwargs));
  else
    out = call_module(n->target(), load_all(normalized->args), load_all(normalized->kwargs));
  if (n->op() != Op::output && out.is_proxy()) {
    out.node()->meta() = n->meta();
    out.node()->set_type(n->type());
  }
  return out;
}

}  // namespace fx::passes
