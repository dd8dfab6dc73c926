// Draws fxcpp::models::resnet18 as docs/images/resnet18.svg is drawn: traces
// it, runs ShapeProp on a 1x3x224x224 input, prints the shape table and
// writes the graph as SVG (Graphviz's dot must be installed).
//
//   draw_resnet18 docs/images/resnet18.svg
#include <fx/fx.h>
#include <fx/graph_module.h>
#include <fx/models/resnet.h>
#include <fx/passes/graph_drawer.h>
#include <fx/passes/print_tabular.h>
#include <fx/passes/shape_prop.h>
#include <torch/torch.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: draw_resnet18 OUT.svg\n";
    return 2;
  }
  try {
    auto model = fx::models::resnet18();
    model->eval();
    auto gm = fx::symbolic_trace(*model);
    fx::passes::ShapeProp(*gm).propagate({torch::randn({1, 3, 224, 224})});
    std::cout << fx::passes::print_tabular(gm->graph()) << "\n";
    fx::passes::FxGraphDrawer(*gm, "resnet18").get_dot_graph().write(argv[1], "svg");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
