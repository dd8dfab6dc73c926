#pragma once
// tabulate's "simple" format, which FX's print_tabular uses: columns at least
// two wider than their header, two spaces apart, trailing blanks removed.

#include <algorithm>
#include <string>
#include <vector>

#include "repr.h"

namespace fx::detail {

inline std::string tabulate_simple(const std::vector<std::string>& headers,
                                   const std::vector<std::vector<std::string>>& rows) {
  const size_t cols = headers.size();
  std::vector<size_t> width(cols);
  for (size_t c = 0; c < cols; ++c) {
    width[c] = headers[c].size() + 2;
    for (const auto& r : rows) width[c] = std::max(width[c], display_width(r[c]));
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cols; ++c) {
      if (c) l += "  ";
      l += cells[c];
      if (c + 1 < cols) l.append(width[c] - display_width(cells[c]), ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
  };
  line(headers);
  out += '\n';
  for (size_t c = 0; c < cols; ++c) {
    if (c) out += "  ";
    out.append(width[c], '-');
  }
  for (const auto& r : rows) {
    out += '\n';
    line(r);
  }
  return out;
}

}  // namespace fx::detail
