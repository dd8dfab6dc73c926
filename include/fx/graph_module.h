#pragma once
// fx::GraphModule: a module made of a Graph.
//
// It holds the graph, exactly the submodules, parameters, buffers and tensor
// attributes the graph refers to (taken from the root it was made from,
// shared, with empty containers created for dotted paths), the generated
// Python code, and an executor compiled from the graph. Edit graph(), then
// recompile(): the code and the behaviour follow.
//
// forward on concrete values runs the compiled plan (every target resolved
// to its LibTorch callable once, at recompile; values freed after their last
// use). forward on symbolic values (tracing a GraphModule) replays the graph
// into the tracer, so retracing gives the same graph.

#include <fx/graph.h>
#include <fx/module.h>
#include <fx/runtime.h>
#include <fx/tracer.h>

#include <memory>
#include <string>
#include <vector>

namespace fx {

class GraphModule : public Module, public OwningModule {
 public:
  // Takes the graph; copies what it refers to from `root`. Throws fx::Error
  // naming the node whose target `root` lacks, and anything recompile throws.
  GraphModule(Module& root, std::unique_ptr<Graph> graph, std::string class_name = "GraphModule");
  ~GraphModule() override;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  // torch.fx's `gm.code`.
  const std::string& code() const { return code_; }
  // Regenerates code() and the executor from graph(): lints the graph and
  // resolves every target. Throws fx::Error naming the node that cannot run.
  void recompile();

  Value forward(const std::vector<Value>& args) override;
  // Runs on tensors/values directly, without fx::Value wrapping.
  c10::IValue run(std::vector<c10::IValue> inputs);

  // torch.fx's `str(gm)`: the module tree, the code, and a reminder line.
  std::string to_string() const;

  // Adds `m` at a dotted path, creating empty containers on the way (FX's
  // add_submodule); replaces a module already there.
  void add_submodule(const std::string& path, std::shared_ptr<torch::nn::Module> m);
  // The module at a dotted path ("" is this one); nullptr if there is none.
  torch::nn::Module* get_submodule(std::string_view path) const;
  // The tensor at a dotted path (parameter, buffer or tensor attribute);
  // throws fx::Error naming the path if there is none.
  at::Tensor get_tensor(std::string_view path) const;

  // OwningModule
  bool has_submodule(std::string_view path) const override;
  bool has_attribute(std::string_view path) const override;

 private:
  struct Plan;
  // forward on the graph's own (flat) inputs.
  Value run_flat(const std::vector<Value>& args);
  void copy_attr(Module& root, const std::string& path, bool is_module);

  std::unique_ptr<Graph> graph_;
  std::string code_;
  std::unique_ptr<Plan> plan_;
};

// torch.fx's symbolic_trace: Tracer().trace(root, concrete_args) made into a
// GraphModule named after the root's class.
std::unique_ptr<GraphModule> symbolic_trace(Module& root, const ConcreteArgs& concrete_args = {});

}  // namespace fx
