#include <fx/passes/remove_dropout.h>

#include <fx/error.h>
#include <fx/nn/dropout.h>
#include <fx/transformer.h>

#include <unordered_map>

#include "replace_uses.h"

namespace fx::passes {

namespace {

// isinstance(m, nn.Dropout): Dropout and its subclasses, except Dropout2d,
// which fxcpp derives from Dropout but PyTorch does not.
bool is_dropout(const torch::nn::Module* m) {
  return dynamic_cast<const nn::Dropout*>(m) && !dynamic_cast<const nn::Dropout2d*>(m);
}

[[noreturn]] void wrong_arity(std::string_view where, size_t n) {
  throw Error("remove_dropout: the Dropout call " + std::string(where) + " has " + std::to_string(n) +
              " arguments; a Dropout takes exactly one (its input)");
}

// torch.fx's DropoutRemover.
class DropoutRemover : public Transformer {
 public:
  using Transformer::Transformer;
  Value call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (is_dropout(module().get_submodule(target.str()))) {
      if (args.size() != 1 || !kwargs.empty())
        wrong_arity("to '" + target.str() + "'", args.size() + kwargs.size());
      return args[0];
    }
    return Transformer::call_module(target, args, kwargs);
  }
};

}  // namespace

std::unique_ptr<GraphModule> remove_dropout(Module& model) {
  std::unique_ptr<GraphModule> traced = symbolic_trace(model);
  return DropoutRemover(*traced).transform();
}

bool remove_dropout(GraphModule& gm) {
  Graph& graph = gm.graph();
  std::unordered_map<Target, bool> dropout;  // per target, looked up once
  bool changed = false;
  for (Node* n : graph.nodes()) {
    if (n->op() != Op::call_module) continue;
    auto [it, inserted] = dropout.try_emplace(n->target(), false);
    if (inserted) it->second = is_dropout(gm.get_submodule(n->target().str()));
    if (!it->second) continue;
    if (n->args().size() != 1 || !n->kwargs().empty())
      wrong_arity("'" + n->name() + "'", n->args().size() + n->kwargs().size());
    detail::replace_uses(n, n->args()[0]);
    graph.erase_node(n);
    changed = true;
  }
  if (changed) gm.recompile();
  return changed;
}

}  // namespace fx::passes
