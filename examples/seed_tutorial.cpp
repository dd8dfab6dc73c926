// The first example of the FX tutorial, built with fxcpp's Graph API:
//
//   class MyModel(nn.Module):
//       def forward(self, x):
//           return self.linear(x + self.param).clamp(min=0.0, max=1.0)
//
// then the tutorial's transformation (every torch.relu becomes
// torch.nn.functional.gelu) on the second example's graph.
#include <fx/fx.h>

#include <iostream>

int main() {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* param = g.get_attr("param");
  fx::Node* add = g.call_function("operator.add", {x, param});
  fx::Node* linear = g.call_module("linear", {add});
  fx::Node* clamp = g.call_method("clamp", {linear}, {{"min", 0.0}, {"max", 1.0}});
  g.output(clamp);
  g.lint();

  std::cout << g << "\n\n" << g.python_code().src << "\n";

  // SimpleNet: x = relu(linear1(x)); x = relu(linear2(x)); then every
  // torch.relu becomes torch.nn.functional.gelu (the nodes keep their names).
  fx::Graph net;
  fx::Node* in = net.placeholder("x");
  fx::Node* h = net.call_function("torch.relu", {net.call_module("linear1", {in})});
  fx::Node* y = net.call_function("torch.relu", {net.call_module("linear2", {h})});
  net.output(y);
  for (fx::Node* n : net.nodes())
    if (n->op() == fx::Op::call_function && n->target() == "torch.relu")
      n->set_target("torch.nn.functional.gelu");
  net.lint();
  std::cout << net.python_code().src << "\n";
  return 0;
}
