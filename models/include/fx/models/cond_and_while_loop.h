#pragma once
// For the tests of control flow in files and passes: a function with a cond
// (sin * 2 or cos + 1, by the sign of x's sum) and then a while_loop that
// doubles its result three times. Captured, its branches are the
// GraphModules true_graph_0, false_graph_0, while_loop_cond_graph_0 and
// while_loop_body_graph_0.
#include <fx/control_flow.h>
#include <torch/torch.h>

#include <vector>

namespace fx::models {

inline c10::IValue cond_and_while_loop(const std::vector<c10::IValue>& in) {
  at::Tensor x = in[0].toTensor();
  at::Tensor y = fx::cond(
      x.sum() > 0, [](const fx::Tensors& a) { return fx::Tensors{a[0].sin() * 2}; },
      [](const fx::Tensors& a) { return fx::Tensors{a[0].cos() + 1}; }, {x})[0];
  return fx::while_loop([](const fx::Tensors& c) { return c[0] < 3; },
                        [](const fx::Tensors& c) {
                          return fx::Tensors{c[0] + 1, c[1] * 2};
                        },
                        {torch::zeros({}, torch::kLong), y})[1];
}

}  // namespace fx::models
