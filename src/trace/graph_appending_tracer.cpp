// GraphAppendingTracer (torch/fx/proxy.py): a tracer without a root module,
// appending to a graph it does not own.
#include <fx/graph_appending_tracer.h>

#include "stack_trace.h"

namespace fx {

Value GraphAppendingTracer::proxy(Node* node) {
  if (!node) throw TraceError("GraphAppendingTracer::proxy: the node is null");
  if (&node->graph() != &graph_ || node->erased())
    throw TraceError("GraphAppendingTracer::proxy: node '" + node->name() +
                     "' is not a live node of the graph this tracer appends to; map it into that graph first "
                     "(e.g. with node_copy) and proxy the copy");
  return Value::proxy(node, this);
}

Argument GraphAppendingTracer::create_arg(const Value& v) {
  // A concrete tensor (items of concrete lists come back here one by one):
  // FX's TracerBase has no module to store it on either (NotImplementedError).
  bool tensor = false;
  if (!v.is_proxy() && !v.is_sequence()) {
    try {
      tensor = v.ivalue().isTensor();
    } catch (const Error&) {  // a constant only an Argument holds (an opaque one): not a tensor
    }
  }
  if (tensor)
    throw TraceError(
        "GraphAppendingTracer cannot record a tensor constant: it has no module to keep it on; register the "
        "tensor on the module, read it with a get_attr node and use a proxy of that node");
  return Tracer::create_arg(v);
}

Node* GraphAppendingTracer::create_node(Op op, Target target, Args args, Kwargs kwargs,
                                        std::optional<std::string> name, std::optional<std::string> type) {
  Node* n =
      graph_.create_node(op, target, std::move(args), std::move(kwargs), std::move(name), std::move(type));
  if (record_stack_traces) n->set_stack_trace(detail::user_stack_trace());
  return n;
}

Value GraphAppendingTracer::call_module(Module&, const std::function<Value()>& forward,
                                        const std::vector<Value>&, const ValueKwargs&) {
  return forward();
}

}  // namespace fx
