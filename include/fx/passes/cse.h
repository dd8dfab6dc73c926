#pragma once
// Common subexpression elimination: torch.fx's CSEPass
// (torch/fx/passes/dialect/common/cse_pass.py). Two nodes with the same op,
// target, args and kwargs (args compared after earlier merges, so chains
// merge too) compute the same value: the later one is replaced by the first.
//
//   // a = x + y; b = x + y; return torch.relu(a) + torch.relu(b)
//   fx::passes::CSEPass::Result r = fx::passes::CSEPass()(*gm);  // a new GraphModule
//   // r.graph_module: a = x + y; relu = torch.relu(a); return relu + relu
//   bool changed = fx::passes::cse(*gm);                          // or in place
//
// Never merged: placeholders, get_attr and output nodes (as in torch.fx), the
// banned targets given, and, beyond torch.fx, every node Node::is_impure
// calls impure (fx/impurity.h: in-place, random, effect-only calls; FX
// leaves that to the banned list) and every node reading a value that an
// in-place call mutates (`a = y + 1; y.add_(1); b = y + 1` keeps b; FX
// merges it). Values compare by kind as well: `x + 1` and `x + 1.0` stay
// apart (Python's 1 == 1.0 merges them in torch.fx).
//
// Linear: one walk, one hash-table probe per node; the hash is computed from
// the node's op, interned target and arguments without building strings.

#include <fx/graph_module.h>
#include <fx/target.h>

#include <memory>
#include <vector>

namespace fx::passes {

// torch.fx's get_CSE_banned_ops(): the ATen random and in-place op packets
// (torch.ops.aten.rand, ..., torch.ops.aten.add_, ...).
std::vector<Target> get_CSE_banned_ops();

class CSEPass {
 public:
  // torch.fx's PassResult.
  struct Result {
    std::unique_ptr<GraphModule> graph_module;
    bool modified = false;
  };
  // A banned target is matched as given and, for an ATen overload
  // (torch.ops.aten.add_.Tensor), through its packet (torch.ops.aten.add_).
  explicit CSEPass(std::vector<Target> banned_ops = {}) : banned_ops_(std::move(banned_ops)) {}
  // A new GraphModule (sharing gm's submodules and tensors) with CSE applied;
  // gm is left as it is.
  Result call(GraphModule& gm) const;
  Result operator()(GraphModule& gm) const { return call(gm); }

 private:
  std::vector<Target> banned_ops_;
};

// CSE on the graph in place.
// Returns whether anything changed.
bool cse(Graph& graph, const std::vector<Target>& banned_ops = {});
// The same on gm.graph() and on the branches of its cond and while_loop
// nodes (each a GraphModule of its own), then recompile() of each that
// changed.
bool cse(GraphModule& gm, const std::vector<Target>& banned_ops = {});

}  // namespace fx::passes
