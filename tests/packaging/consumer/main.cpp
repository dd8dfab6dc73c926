#include <fx/fx.h>
#include <iostream>

int main() {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* param = g.get_attr("param");
  fx::Node* add = g.call_function("operator.add", {x, param});
  fx::Node* linear = g.call_module("linear", {add});
  g.output(g.call_method("clamp", {linear}, {{"min", 0.0}, {"max", 1.0}}));

  std::cout << g << "\n" << g.python_code().src;
}
