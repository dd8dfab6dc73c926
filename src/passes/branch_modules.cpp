#include "branch_modules.h"

#include <unordered_set>

namespace fx::passes::detail {

std::vector<GraphModule*> branch_modules(const GraphModule& gm) {
  static const Target kCond("torch.ops.higher_order.cond"), kWhileLoop("torch.ops.higher_order.while_loop");
  std::vector<GraphModule*> out;
  std::unordered_set<const GraphModule*> seen;
  for (const Node* n : gm.graph().nodes()) {
    if (n->op() != Op::call_function || (n->target() != kCond && n->target() != kWhileLoop)) continue;
    for (const Argument& a : n->args()) {
      const Node* attr = a.node();
      if (!attr || attr->op() != Op::get_attr) continue;
      auto* branch = dynamic_cast<GraphModule*>(gm.get_submodule(attr->target().str()));
      if (branch && seen.insert(branch).second) out.push_back(branch);
    }
  }
  return out;
}

}  // namespace fx::passes::detail
