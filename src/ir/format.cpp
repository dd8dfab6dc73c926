// The graph printout and print_tabular, as torch.fx prints them.
#include <fx/graph.h>

#include "repr.h"
#include "tabulate.h"

namespace fx {

std::string Graph::to_string() const {
  std::string out = "graph():";
  for (Node* n : nodes()) {
    out += "\n    ";
    out += n->format_node();
  }
  return out;
}

// Targets print as their qualified names (FX prints the function object).
std::string Graph::print_tabular() const {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(size_);
  for (Node* n : nodes()) {
    Dict kwargs;
    for (const auto& kv : n->kwargs()) kwargs.items.push_back(kv);
    rows.push_back({std::string(op_name(n->op())), n->name(), n->target().str(),
                    detail::repr(Tuple{n->args()}, detail::plain_names()),
                    detail::repr(kwargs, detail::plain_names())});
  }
  return detail::tabulate_simple({"opcode", "name", "target", "args", "kwargs"}, rows);
}

}  // namespace fx
