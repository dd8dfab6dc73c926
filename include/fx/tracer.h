#pragma once
// fx::Tracer: symbolic tracing of an fx::Module into a Graph, with torch.fx's
// semantics; subclass it to change how modules, attributes and values are
// recorded (FX's Tracer methods of the same names).
//
// Placeholders come from forward's parameters (with their defaults);
// parameters used are get_attr nodes (found by identity, one per parameter),
// buffers get a get_attr node per use, other tensors become `_tensor_constantN`
// attributes of the root (registered on it, as torch.fx sets them); leaf modules are call_module nodes and
// other modules are traced through.

#include <fx/graph.h>
#include <fx/module.h>
#include <fx/value.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fx {

class Tracer {
 public:
  Tracer() = default;
  virtual ~Tracer() = default;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Traces root.forward into a new graph: one placeholder per forward
  // parameter, then whatever forward does.
  std::unique_ptr<Graph> trace(Module& root);

  // ---- overridable behaviour ----
  // Whether `m` is recorded as one call_module node. Default: fx::nn's
  // standard modules, except containers (Sequential, ModuleList, ModuleDict).
  virtual bool is_leaf_module(const Module& m, std::string_view qualified_name) const;
  // Calls `m`: a call_module node for a leaf, `forward()` traced through otherwise.
  virtual Value call_module(Module& m, const std::function<Value()>& forward, const std::vector<Value>& args,
                            const ValueKwargs& kwargs);
  // Turns a value used as an argument into a node argument: proxies become
  // their nodes, parameters/buffers get_attr nodes, other tensors constants.
  virtual Argument create_arg(const Value& v);
  virtual Node* create_node(Op op, Target target, Args args, Kwargs kwargs,
                            std::optional<std::string> name = std::nullopt,
                            std::optional<std::string> type = std::nullopt);
  // create_arg on every argument, then create_node: the recorded operation.
  virtual Value create_proxy(Op op, Target target, const std::vector<Value>& args, const ValueKwargs& kwargs,
                             std::optional<std::string> name = std::nullopt);
  // The qualified name of a submodule of the root; throws fx::TraceError if
  // `m` is not in the root's hierarchy.
  virtual std::string path_of_module(const Module& m) const;
  // A parameter of the root read as an attribute: a get_attr node (cached:
  // one node per parameter, as FX's parameter proxy cache).
  virtual Value getattr(std::string_view qualified_name, const at::Tensor& value);

  Graph& graph() { return *graph_; }
  Module& root() { return *root_; }
  // The tracer running on this thread, or nullptr.
  static Tracer* current();

 private:
  std::unique_ptr<Graph> graph_;
  Module* root_ = nullptr;
  std::unordered_map<const void*, std::string> param_names_;   // TensorImpl* -> qualified name
  std::unordered_map<const void*, std::string> buffer_names_;  // TensorImpl* -> qualified name
  std::unordered_map<const void*, Value> param_proxies_;
  std::unordered_map<const void*, std::string> constant_names_;
  std::unordered_map<const Module*, std::string> module_paths_;
};

// Tracer().trace(root) as a graph.
std::unique_ptr<Graph> symbolic_trace_graph(Module& root);

}  // namespace fx
