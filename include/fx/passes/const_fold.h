#pragma once
// Constant folding: torch.fx's torch.fx.experimental.const_fold. The nodes
// that depend only on get_attr nodes (parameters, buffers, constants) are
// split off into a constant subgraph, run once, and their results stored on
// the module as `_FX_CONST_FOLDED_ATTRS` (a tensor, or for several results a
// list indexed with getitem), which the main graph reads instead:
//
//   // forward(x): a = self.attr_1 + self.attr_1; return (x - a) * 2
//   std::unique_ptr<fx::passes::FoldedGraphModule> folded = fx::passes::split_const_subgraphs(*gm);
//   // folded->graph():  %_fx_const_folded_attrs = get_attr[target=_FX_CONST_FOLDED_ATTRS]
//   //                   %sub = call_function[target=operator.sub](args = (%x, %_fx_const_folded_attrs))
//   c10::IValue y = folded->run({x});  // runs the constant subgraph first (run_folding), once
//
// The graphs (main and constant) are torch.fx 2.14's, name for name: the
// split follows torch.fx.passes.split_module (two partitions; call_module
// targets flattened, `layer1.conv` -> `layer1_conv`), and the non-constant
// part is inlined back. A graph with nothing to fold gives a
// FoldedGraphModule without a constant subgraph (has_const_subgraph() false).
//
// Differences from torch.fx (docs/passes.md): impure calls (fx/impurity.h:
// random, in-place) are not folded, and neither is a value an in-place call
// writes or anything it may alias (`w.view(-1).add_(1)` keeps every
// computation on `w` in the main graph), nor an unused in-place call removed
// (torch.fx folds `w + w` and drops an unused `x.add_(1)` there); a constant
// computation whose value nobody uses, or a graph whose every result is
// constant, is handled (torch.fx raises an IndexError / AttributeError).
//
// Linear in the size of the graph.

#include <fx/graph_module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx::passes {

// torch.fx's FoldedGraphModule: a GraphModule whose graph reads the folded
// attributes, and the constant subgraph that computes them.
class FoldedGraphModule : public GraphModule {
 public:
  // Folding runs on the first forward/run, or when run_folding is called.
  Value forward(const std::vector<Value>& args) override;
  // Runs the constant subgraph first if it has not run (through a
  // GraphModule& too: run is virtual).
  c10::IValue run(std::vector<c10::IValue> inputs) override;
  // torch.fx's run_folding: runs the constant subgraph and stores its results
  // (an int result becomes a one-element tensor, as torch.fx does). A second
  // call, or one without a constant subgraph, does nothing.
  void run_folding();

  bool has_const_subgraph() const { return const_subgraph_module_ != nullptr; }
  // The constant subgraph (no placeholders; get_attr nodes read this
  // module's tensors), or nullptr.
  GraphModule* const_subgraph_module() const { return const_subgraph_module_.get(); }
  bool has_folding_been_run() const { return has_folding_been_run_; }
  // The attribute the folded values are stored under (`_FX_CONST_FOLDED_ATTRS`).
  const std::optional<std::string>& fx_const_folded_attrs_name() const { return attrs_name_; }
  // The folded values, in the constant subgraph's output order (empty before folding).
  const std::vector<at::Tensor>& folded_attrs() const { return folded_; }

 private:
  friend struct ConstFoldBuilder;
  friend bool fold_constants(GraphModule&, const std::function<bool(const Node&)>&);
  FoldedGraphModule(const std::map<std::string, Attr>& root, std::unique_ptr<Graph> graph);
  FoldedGraphModule(Module& root, std::unique_ptr<Graph> graph);
  std::unique_ptr<GraphModule> const_subgraph_module_;
  std::optional<std::string> attrs_name_;
  bool multiple_outputs_ = false;
  bool has_folding_been_run_ = false;
  std::vector<at::Tensor> folded_;
  // What runs after folding: this graph with the reads of the folded
  // attributes made direct (getitem of the list becomes a get_attr of one).
  std::unique_ptr<GraphModule> exec_;
};

// torch.fx's split_const_subgraphs(module, skip_folding_node_fn). `gm` is
// not modified; the result shares its submodules and tensors. A node for
// which skip_folding_node_fn returns true is not folded.
std::unique_ptr<FoldedGraphModule> split_const_subgraphs(
    GraphModule& gm, const std::function<bool(const Node&)>& skip_folding_node_fn = nullptr);
// The same on symbolic_trace(module).
std::unique_ptr<FoldedGraphModule> split_const_subgraphs(
    Module& module, const std::function<bool(const Node&)>& skip_folding_node_fn = nullptr);

// Constant folding in place (the pass registry's "fold", `fxc opt -p fold`):
// split_const_subgraphs(gm), the constant subgraph run once, and gm made to
// run what the FoldedGraphModule runs after folding: its graph reads the
// folded values as parameters (`_FX_CONST_FOLDED_ATTRS`, or
// `_FX_CONST_FOLDED_ATTRS.0`, `.1`, ... under an empty container for
// several), so that the result is a plain GraphModule that files hold.
// Returns false, changing nothing, when nothing folds.
bool fold_constants(GraphModule& gm, const std::function<bool(const Node&)>& skip_folding_node_fn = nullptr);

}  // namespace fx::passes
