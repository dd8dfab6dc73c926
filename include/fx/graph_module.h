#pragma once
// fx::GraphModule: a module made of a Graph.
//
// It holds the graph, exactly the submodules, parameters, buffers and tensor
// attributes the graph refers to (taken from the root it was made from,
// shared, with empty containers created for dotted paths), the generated
// Python code, and an executor compiled from the graph. Edit graph(), then
// recompile(): the code and the behaviour follow.
//
// forward on concrete values runs the execution plan recompile() builds
// (every target resolved to its LibTorch callable once; values freed after
// their last use). forward on symbolic values (tracing a GraphModule) replays the graph
// into the tracer, so retracing gives the same graph.

#include <fx/graph.h>
#include <fx/module.h>
#include <fx/runtime.h>
#include <fx/tracer.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace fx {

namespace runtime {
class ExecutionPlan;  // src/runtime/execution_plan.h
}

class GraphModule : public Module, public OwningModule {
 public:
  // Takes the graph; copies what it refers to from `root`, and root's
  // training flag. Throws fx::Error naming the node whose target `root`
  // lacks, and anything recompile throws.
  GraphModule(Module& root, std::unique_ptr<Graph> graph, std::string class_name = "GraphModule");

  // What a GraphModule can be made of instead of a root module (torch.fx's
  // `GraphModule(root: Dict[str, Any], graph)`): a submodule, a tensor (a
  // buffer, as torch.fx registers a tensor that is not an nn.Parameter) or a
  // parameter (Attr::parameter(t), Python's nn.Parameter).
  class Attr {
   public:
    template <class M>
    requires std::is_base_of_v<torch::nn::Module, M> Attr(std::shared_ptr<M> m) : module_(std::move(m)) {}
    Attr(at::Tensor t) : tensor_(std::move(t)) {}
    static Attr parameter(at::Tensor t) {
      Attr a(std::move(t));
      a.is_parameter_ = true;
      return a;
    }
    const std::shared_ptr<torch::nn::Module>& module() const { return module_; }
    const at::Tensor& tensor() const { return tensor_; }
    bool is_parameter() const { return is_parameter_; }

   private:
    std::shared_ptr<torch::nn::Module> module_;
    at::Tensor tensor_;
    bool is_parameter_ = false;
  };
  // Each get_attr/call_module target is looked up as a whole in `root` (keys
  // are dotted paths; the levels between are made as empty containers) and
  // shared. Throws fx::Error naming the node whose target `root` lacks.
  GraphModule(const std::map<std::string, Attr>& root, std::unique_ptr<Graph> graph,
              std::string class_name = "GraphModule");
  ~GraphModule() override;

  // Python's copy.deepcopy(gm): a GraphModule of the same class name with its
  // own copy of the graph (same code) and of every submodule, parameter,
  // buffer and tensor attribute (own storage; aliases stay aliases). A
  // submodule is copied with its clone(); one whose class does not implement
  // clone() gives an fx::Error naming its path.
  std::unique_ptr<GraphModule> deepcopy() const;
  // torch::nn::Module's deep copy, so that a GraphModule nested in another
  // module copies too: deepcopy(), with every tensor on `device` if given.
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  // torch.fx's `gm.code`.
  const std::string& code() const { return code_; }
  // Regenerates code() and the executor from graph(): lints the graph and
  // resolves every target. Throws fx::Error naming the node that cannot run.
  void recompile();
  // torch.fx's `gm.graph = g`: takes `graph` in place of the current one and
  // recompiles. Its get_attr/call_module targets must be in this module
  // already (assign_attr, add_submodule); recompile's lint names the node
  // otherwise, and the module keeps its old graph.
  void set_graph(std::unique_ptr<Graph> graph);

  Value forward(const std::vector<Value>& args) override;
  // Runs on tensors/values directly, without fx::Value wrapping. Virtual:
  // a subclass (FoldedGraphModule) runs its own steps first, whatever the
  // reference it is called through.
  virtual c10::IValue run(std::vector<c10::IValue> inputs);

  // torch.fx's `str(gm)`: the module tree, the code, and a reminder line.
  std::string to_string() const;

  // Adds `m` at a dotted path, creating empty containers on the way (FX's
  // add_submodule); replaces a module already there.
  void add_submodule(const std::string& path, std::shared_ptr<torch::nn::Module> m);
  // Puts a submodule or a tensor (parameter or buffer, per the Attr) at a
  // dotted path, creating empty containers on the way (torch.fx's
  // _assign_attr); replaces what is there.
  void assign_attr(const std::string& path, const Attr& value);
  // The module at a dotted path ("" is this one); nullptr if there is none.
  torch::nn::Module* get_submodule(std::string_view path) const;
  // FX's delete_submodule: removes the submodule at a dotted path from its
  // parent. Returns false, changing nothing, when there is no module there.
  // Like every edit, it reaches forward at recompile() (until then a run
  // still calls the module, which stays alive while the plan holds it).
  bool delete_submodule(const std::string& path);
  // FX's delete_all_unused_submodules: deletes every submodule that no
  // get_attr or call_module node reaches (a path's prefixes and a called
  // module's own submodules count as reached).
  void delete_all_unused_submodules();
  // The tensor at a dotted path (parameter, buffer or tensor attribute);
  // throws fx::Error naming the path if there is none.
  at::Tensor get_tensor(std::string_view path) const;

  // OwningModule
  bool has_submodule(std::string_view path) const override;
  bool has_attribute(std::string_view path) const override;
  bool has_target_module(const Target& target) const override;
  // A Dropout in training is random (in_place with inplace=true); any other
  // module is pure, as in torch.fx (which asks a module's `_is_impure`).
  Impurity module_impurity(const Target& target) const override;

 private:
  // forward on the graph's own (flat) inputs.
  Value run_flat(const std::vector<Value>& args);
  struct RootIndex;
  torch::nn::Module* copy_attr(RootIndex& index, const std::string& path, bool is_module);
  torch::nn::Module* make_path(RootIndex& index, const std::string& path);
  std::unique_ptr<GraphModule> copy_to(const c10::optional<c10::Device>& device) const;

  std::unique_ptr<Graph> graph_;
  std::string code_;
  std::unique_ptr<runtime::ExecutionPlan> plan_;
  // The module a call_module target names, remembered while the
  // constructor and recompile() run: the constructor places every target,
  // then lint and the plan look each one up, three walks through LibTorch's
  // dicts by name. Null at any other time, when the tree may change.
  torch::nn::Module* target_module(const Target& target) const;
  struct ModuleMemo;
  struct MemoScope;
  std::unique_ptr<ModuleMemo> memo_;
};

// torch.fx's symbolic_trace: Tracer().trace(root, concrete_args) made into a
// GraphModule named after the root's class.
std::unique_ptr<GraphModule> symbolic_trace(Module& root, const ConcreteArgs& concrete_args = {});

}  // namespace fx
