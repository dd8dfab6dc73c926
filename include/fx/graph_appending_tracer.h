#pragma once
// fx::GraphAppendingTracer: records operations on Proxies into an existing
// Graph (torch.fx's torch.fx.proxy.GraphAppendingTracer), so that a
// transform can write a node's replacement as ordinary code over fx::Values:
// the "Proxy / retracing" style of FX's documentation.
//
//   // relu(x) -> (x > 0) * x, everything else copied
//   auto new_graph = std::make_unique<fx::Graph>();
//   fx::GraphAppendingTracer tracer(*new_graph);
//   std::unordered_map<const fx::Node*, fx::Node*> env;
//   for (fx::Node* node : gm->graph().nodes()) {
//     if (node->op() == fx::Op::call_function && node->target() == "torch.relu") {
//       fx::Value x = tracer.proxy(env.at(node->args()[0].node()));
//       env[node] = ((x > 0) * x).node();
//     } else {
//       env[node] = new_graph->node_copy(*node, [&](fx::Node* n) -> fx::Argument { return env.at(n); });
//     }
//   }
//   fx::GraphModule decomposed(*gm, std::move(new_graph));
//
// Every operation on a Value holding a proxy of this tracer appends a node at
// the graph's insert point (so `graph.inserting_before(n)` places them), named
// as torch.fx names them. An fx::Module called on such values is traced
// through (FX's GraphAppendingTracer has no leaf modules).
//
// What it cannot record, as in FX: tensor constants (there is no root module
// to keep them on; put the tensor on the module and read it with a get_attr
// node, then proxy that node) — fx::TraceError. Inside a Transformer override
// no GraphAppendingTracer is needed: its Values already record into the new
// graph (see transformer.h).

#include <fx/tracer.h>

namespace fx {

class GraphAppendingTracer : public Tracer {
 public:
  // Records into `graph`, which must outlive this tracer and the proxies it makes.
  explicit GraphAppendingTracer(Graph& graph) : graph_(graph) {}

  // The graph nodes are appended to.
  Graph& graph() override { return graph_; }
  // FX's `Proxy(node, tracer)`: a symbolic value for a node of graph().
  // Throws fx::TraceError for a node of another graph.
  Value proxy(Node* node);

  Argument create_arg(const Value& v) override;
  Node* create_node(Op op, Target target, Args args, Kwargs kwargs,
                    std::optional<std::string> name = std::nullopt,
                    std::optional<std::string> type = std::nullopt) override;
  // No module is a leaf: `forward` is traced through.
  Value call_module(Module& m, const std::function<Value()>& forward, const std::vector<Value>& args,
                    const ValueKwargs& kwargs) override;

 private:
  Graph& graph_;
};

}  // namespace fx
