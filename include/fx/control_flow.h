#pragma once
// fx::cond and fx::while_loop: data-dependent control flow that a graph can
// hold, as torch.cond and torch.while_loop (torch._higher_order_ops) in
// Python.
//
//   auto y = fx::cond(x.sum() > 0,
//                     [](const fx::Tensors& in) { return fx::Tensors{in[0].sin()}; },
//                     [](const fx::Tensors& in) { return fx::Tensors{in[0].cos()}; }, {x});
//   auto [i, z] = fx::while_loop([](const fx::Tensors& c) { return c[0] < 5; },
//                                [](const fx::Tensors& c) { return fx::Tensors{c[0] + 1, c[1] * 2}; },
//                                {torch::tensor(0), x});  // a vector of two tensors
//
// Run eagerly, cond runs the branch its predicate picks and while_loop runs
// the loop. Under fx::capture they record what make_fx records for
// torch.cond and torch.while_loop:
//
//   true_graph_0 = self.true_graph_0
//   false_graph_0 = self.false_graph_0
//   cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (x_1,))
//   getitem = cond[0]
//
// with each branch (the loop's condition and body) captured into a
// GraphModule submodule whose placeholders are arg0_1, arg1_1, ...; the
// captured graph runs whichever branch its input picks, and loops as long as
// its input says. As torch.cond asks, branches take every tensor they read
// as an operand (a tensor of the enclosing code they close over is not an
// input of the subgraph: the capture refuses it by name) and do not update their operands in
// place. Both branches must return as many tensors, of the same dtypes and
// sizes, and the loop's body what it was given: fx::TraceError otherwise,
// naming both.
//
// Under fx::symbolic_trace there is nothing to decide the predicate with:
// torch.fx's symbolic_trace refuses torch.cond too. Capture the code
// (fx::capture) to record it.

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace fx {

using Tensors = std::vector<at::Tensor>;
using TensorsFn = std::function<Tensors(const Tensors&)>;
using PredicateFn = std::function<at::Tensor(const Tensors&)>;

// `pred` is a one-element tensor (bool or number). Returns the outputs of
// the branch it picks.
Tensors cond(const at::Tensor& pred, const TensorsFn& true_fn, const TensorsFn& false_fn,
             const Tensors& operands);

// while cond_fn(carried): carried = body_fn(carried). Returns the final carried values.
Tensors while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn, const Tensors& carried);

}  // namespace fx
