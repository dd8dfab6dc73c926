#pragma once
// Where each value of a graph dies: for every node, the inputs it is the last
// user of (walking backwards, the first use seen is the last one).

#include <fx/graph.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fx::detail {

inline std::unordered_map<const Node*, std::vector<const Node*>> last_uses(const Graph& g) {
  std::unordered_map<const Node*, std::vector<const Node*>> dies_at;
  std::unordered_set<const Node*> seen;
  for (Node* n : g.nodes().reversed())
    for (Node* in : n->all_input_nodes())
      if (seen.insert(in).second) dies_at[n].push_back(in);
  return dies_at;
}

}  // namespace fx::detail
