#pragma once
// fx::passes::NormalizeArgs: rewrite calls to keyword form (torch.fx 2.14's
// NormalizeArgs, torch/fx/experimental/normalize.py): each
// call_function and call_module node's arguments are matched to its
// target's signature (see operator_schemas.h), the defaults filled in, and
// written as keywords in parameter order, or, with
// normalize_to_only_use_kwargs = false, with the positional ones kept
// positional.
//
//   auto gm = fx::symbolic_trace(*fx::models::resnet18());
//   auto normalized = fx::passes::NormalizeArgs(*gm).transform();
//   // conv1 = self.conv1(input = x)
//   // flatten = torch.flatten(input = avgpool, start_dim = 1, end_dim = -1)
//
// A Transformer: the result is a new GraphModule; every node keeps its
// meta and type annotation. call_method nodes, and calls whose target has no
// signature or whose arguments fit several schemas, stay as they are.
// Throws fx::Error (naming the node) where torch.fx raises: arguments that do
// not fit a Python function's or a standard module's signature.

#include <fx/passes/operator_schemas.h>
#include <fx/transformer.h>

namespace fx::passes {

class NormalizeArgs : public Transformer {
 public:
  explicit NormalizeArgs(GraphModule& module, bool normalize_to_only_use_kwargs = true);

  Value run_node(Node* n) override;

 private:
  std::vector<Value> load_all(const Args& args) const;
  ValueKwargs load_all(const Kwargs& kwargs) const;
  bool normalize_to_only_use_kwargs_;
};

}  // namespace fx::passes
