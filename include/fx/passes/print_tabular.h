#pragma once
// fx::passes::print_tabular: Graph::print_tabular's table (opcode, name,
// target, args, kwargs) with two more columns, `shape` and `dtype`, filled
// from meta["tensor_meta"] where ShapeProp recorded it. An fxcpp addition:
// torch.fx has no such table (Graph::print_tabular stays byte-identical to
// FX's `graph.print_tabular()`).
//
//   fx::passes::ShapeProp(*gm).propagate({torch::randn({2, 4})});
//   std::cout << fx::passes::print_tabular(gm->graph()) << "\n";
//
//   opcode       name    target        args        kwargs    shape    dtype
//   -----------  ------  ------------  ----------  --------  -------  -------------
//   placeholder  x       x             ()          {}        (2, 4)   torch.float32
//   call_module  linear  linear        (x,)        {}        (2, 5)   torch.float32
//   ...
//
// A tensor's shape prints as Python's tuple(shape); a node whose value is a
// tuple or list of tensors shows the same structure (`((2, 5), None)`). A
// node without tensor_meta has empty cells.

#include <fx/graph.h>

#include <string>

namespace fx::passes {

std::string print_tabular(const Graph& graph);

}  // namespace fx::passes
