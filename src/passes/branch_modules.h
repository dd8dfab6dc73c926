#pragma once
// The branches of a GraphModule's higher-order nodes: the GraphModule
// submodules that its cond and while_loop nodes read through get_attr, in
// graph order. The GraphModule-level passes (DCE, CSE) go into them.

#include <fx/graph_module.h>

#include <vector>

namespace fx::passes::detail {

std::vector<GraphModule*> branch_modules(const GraphModule& gm);

}  // namespace fx::passes::detail
