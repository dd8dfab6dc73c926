// The graph printout and print_tabular, as torch.fx prints them.
#include <fx/graph.h>

#include <algorithm>
#include <array>

#include "repr.h"

namespace fx {

std::string Graph::to_string() const {
  std::string out = "graph():";
  for (Node* n : nodes()) {
    out += "\n    ";
    out += n->format_node();
  }
  return out;
}

// tabulate's "simple" format, which FX's print_tabular uses: columns at least
// two wider than their header, two spaces apart, trailing blanks removed.
// Targets print as their qualified names (FX prints the function object).
std::string Graph::print_tabular() const {
  constexpr size_t kCols = 5;
  const std::array<std::string, kCols> headers = {"opcode", "name", "target", "args", "kwargs"};
  std::vector<std::array<std::string, kCols>> rows;
  rows.reserve(size_);
  for (Node* n : nodes()) {
    Dict kwargs;
    for (const auto& kv : n->kwargs()) kwargs.items.push_back(kv);
    rows.push_back({std::string(op_name(n->op())), n->name(), n->target().str(),
                    detail::repr(Tuple{n->args()}, detail::plain_names()),
                    detail::repr(kwargs, detail::plain_names())});
  }
  std::array<size_t, kCols> width{};
  for (size_t c = 0; c < kCols; ++c) {
    width[c] = headers[c].size() + 2;
    for (const auto& r : rows) width[c] = std::max(width[c], detail::display_width(r[c]));
  }
  std::string out;
  auto line = [&](const std::array<std::string, kCols>& cells) {
    std::string l;
    for (size_t c = 0; c < kCols; ++c) {
      if (c) l += "  ";
      l += cells[c];
      if (c + 1 < kCols) l.append(width[c] - detail::display_width(cells[c]), ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
  };
  line(headers);
  out += '\n';
  for (size_t c = 0; c < kCols; ++c) {
    if (c) out += "  ";
    out.append(width[c], '-');
  }
  for (const auto& r : rows) {
    out += '\n';
    line(r);
  }
  return out;
}

}  // namespace fx
