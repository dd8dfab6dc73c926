// Phase 3 of fx::compile: which lowered nodes run in one loop.
//
// One walk in graph order. A lowered node joins the open kernel of its
// operands when their iteration spaces (shapes) are equal; when it reads
// two open kernels of its shape it merges them (vertical fusion of a
// diamond, `x * sigmoid(x)`). A kernel runs where its last member was, so it
// may only grow while nothing outside it has read one of its values: the
// first node outside it that does closes it. That keeps every value made
// before it is read. The walk is linear but for merges, which move the
// smaller member list (union by size: O(n log n) at worst).
#include "phases.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace fx::compile_detail {

namespace {

struct Group {
  std::vector<int64_t> shape;
  std::vector<Node*> members;
  bool open = true;
};

// Union-find over groups: merged groups point at the one that absorbed them.
int find(std::vector<int>& parent, int g) {
  while (parent[g] != g) g = parent[g] = parent[parent[g]];
  return g;
}

std::string kernel_name(const std::vector<Node*>& members, size_t index) {
  std::string name = "cpp_fused";
  std::set<std::string> seen;
  size_t named = 0;
  for (Node* n : members) {
    const std::string& op = n->target().ops_name()->op;
    if (!seen.insert(op).second) continue;
    if (++named > 4) break;  // Inductor's names stay short too
    name += "_" + op;
  }
  return name + "_" + std::to_string(index);
}

}  // namespace

std::vector<Kernel> schedule(const Graph& graph,
                             const std::unordered_map<const Node*, PointwiseOp>& lowered) {
  std::vector<Group> groups;
  std::vector<int> parent;
  std::vector<int> group_of(graph.index_bound(), -1);
  std::vector<size_t> position(graph.index_bound(), 0);
  size_t pos = 0;
  for (Node* n : graph.nodes()) {
    position[n->index()] = pos++;
    int joined = -1;
    if (auto it = lowered.find(n); it != lowered.end()) {
      const std::vector<int64_t>& shape = tensor_meta(*n)->shape;
      for (Node* in : it->second.inputs) {
        if (group_of[in->index()] < 0) continue;
        int g = find(parent, group_of[in->index()]);
        if (!groups[g].open || groups[g].shape != shape || g == joined) continue;
        if (joined < 0) {
          joined = g;
          continue;
        }
        // Both open: merge the smaller into the larger.
        int big = groups[g].members.size() > groups[joined].members.size() ? g : joined;
        int small = big == g ? joined : g;
        auto& into = groups[big].members;
        into.insert(into.end(), groups[small].members.begin(), groups[small].members.end());
        groups[small].members.clear();
        parent[small] = big;
        joined = big;
      }
      if (joined < 0) {
        joined = static_cast<int>(groups.size());
        groups.push_back({shape, {}, true});
        parent.push_back(joined);
      }
      groups[joined].members.push_back(n);
      group_of[n->index()] = joined;
    }
    // A node outside a kernel that reads it closes it.
    for (Node* in : n->all_input_nodes()) {
      if (group_of[in->index()] < 0) continue;
      int g = find(parent, group_of[in->index()]);
      if (g != joined) groups[g].open = false;
    }
  }

  std::vector<Kernel> kernels;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (parent[g] != static_cast<int>(g) || groups[g].members.size() < 2) continue;
    Kernel k;
    k.shape = groups[g].shape;
    k.members = std::move(groups[g].members);
    std::sort(k.members.begin(), k.members.end(),
              [&](Node* a, Node* b) { return position[a->index()] < position[b->index()]; });
    auto inside = [&](const Node* x) {
      return group_of[x->index()] >= 0 && find(parent, group_of[x->index()]) == static_cast<int>(g);
    };
    std::set<const Node*> seen;
    for (Node* m : k.members) {
      for (Node* in : lowered.at(m).inputs)
        if (!inside(in) && seen.insert(in).second) k.inputs.push_back(in);
      for (Node* user : m->users())
        if (!inside(user)) {
          k.outputs.push_back(m);
          break;
        }
    }
    if (!k.outputs.empty()) kernels.push_back(std::move(k));  // else dead code: left to ATen
  }
  // Named in the order they run (by their last member).
  std::sort(kernels.begin(), kernels.end(), [&](const Kernel& a, const Kernel& b) {
    return position[a.members.back()->index()] < position[b.members.back()->index()];
  });
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].name = kernel_name(kernels[i].members, i);
  return kernels;
}

}  // namespace fx::compile_detail
