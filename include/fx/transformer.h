#pragma once
// fx::Transformer: torch.fx's Transformer, an Interpreter that runs a
// GraphModule's graph on Proxies and so records a new graph; transform()
// returns it as a new GraphModule. Subclass it and override the method of an
// opcode to rewrite what that kind of node becomes:
//
//   struct ReluToGelu : fx::Transformer {
//     using fx::Transformer::Transformer;
//     fx::Value call_function(fx::Target t, const std::vector<fx::Value>& a, const fx::ValueKwargs& k)
//     override {
//       if (t == "torch.relu") return fx::call("torch.nn.functional.gelu", a[0]);
//       return fx::Transformer::call_function(t, a, k);
//     }
//   };
//   std::unique_ptr<fx::GraphModule> gelu = ReluToGelu(*gm).transform();
//
// What each opcode becomes by default (as in torch.fx):
// - placeholder: a placeholder of the same name and default value;
// - get_attr: a get_attr node of the same target, one per original node;
// - call_module: the tracer's call_module, so its leaf policy decides (the
//   default tracer keeps every module a leaf, as the original graph did);
// - call_function / call_method: recorded with the tracer's create_proxy.
// Operations on the Values an override receives are recorded too (they are
// Proxies of the tracer), so an override may emit several nodes.

#include <fx/graph_module.h>
#include <fx/interpreter.h>
#include <fx/tracer.h>

#include <memory>

namespace fx {

class Transformer : public Interpreter {
 public:
  // `tracer` records the new graph; by default one whose is_leaf_module is
  // always true (torch.fx's TransformerTracer). Pass another to trace
  // through some modules instead.
  explicit Transformer(GraphModule& module, std::unique_ptr<Tracer> tracer = nullptr);

  // Runs the graph symbolically and returns the new GraphModule (named
  // "GraphModule", as torch.fx names it), which shares the submodules and
  // tensors it uses with module(). Throws fx::Error naming the node whose
  // rewrite failed.
  std::unique_ptr<GraphModule> transform();

  Value placeholder(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value get_attr(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value call_method(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;

  // The tracer recording the new graph, and that graph; the graph exists
  // only while transform() runs (fx::Error otherwise).
  Tracer& tracer() { return *tracer_; }
  Graph& new_graph();

 private:
  std::unique_ptr<Tracer> tracer_;
  bool transforming_ = false;
};

}  // namespace fx
