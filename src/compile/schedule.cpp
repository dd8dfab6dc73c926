// Phase 3 of fx::compile: which lowered nodes run in one loop.
//
// One walk in graph order. A lowered node joins the open kernel of its
// operands when their iteration spaces (shapes) and types are equal; when it reads
// two open kernels of its shape it merges them (vertical fusion of a
// diamond, `x * sigmoid(x)`). A kernel runs where its last member was, so it
// may only grow while nothing outside it has read one of its values: the
// first node outside it that does closes it. That keeps every value made
// before it is read. The walk is linear but for merges, which move the
// smaller member list (union by size: O(n log n) at worst).
//
// Then horizontal fusion: two loops over the same space that read a common
// input become one loop, which reads it once (fuse_horizontally).
#include "phases.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace fx::compile_detail {

namespace {

struct Group {
  std::vector<int64_t> shape;  // the iteration space
  c10::ScalarType dtype;       // S, the type it computes in; bool until a member has one
  std::vector<Node*> members;
  bool open = true;
  bool row = false;  // holds a reduction over the last dimension
};

// Whether kernels computing in `a` and in `b` can be one: logical
// operators on masks (bool) compute in any type.
bool same_compute(c10::ScalarType a, c10::ScalarType b) {
  return a == b || a == c10::kBool || b == c10::kBool;
}
c10::ScalarType joint_compute(c10::ScalarType a, c10::ScalarType b) { return a == c10::kBool ? b : a; }

// Whether a node computing `out` in `dtype` (or, for a reduction,
// reducing a tensor of shape `space`) can be a member of a loop over `g`.
bool fits(const Group& g, const std::vector<int64_t>& space, const std::vector<int64_t>& out,
          c10::ScalarType dtype, bool reduction) {
  if (!same_compute(g.dtype, dtype)) return false;
  if (reduction) return g.shape == space;
  if (g.shape == out) return true;
  if (!g.row || g.shape.size() != out.size()) return false;  // a value per row: the last dimension 1
  for (size_t d = 0; d + 1 < out.size(); ++d)
    if (out[d] != g.shape[d]) return false;
  return out.back() == 1;
}

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

// Horizontal fusion: two groups over the same space, in the same type,
// both row groups or neither, that read a common input become one, which
// reads it once (Inductor fuses such nodes by the memory traffic saved).
// The merged group runs where the later one ends, so the earlier one's
// values must have no reader outside it before then. Each group ends once,
// in graph order; the candidate for it is the latest group of its kind:
// an earlier one that could not join that one has a reader before it, and
// so before this one too. Linear in the graph but for the map of kinds.
void fuse_horizontally(const Graph& graph, std::vector<Group>& groups, std::vector<int>& parent,
                       const std::vector<int>& group_of, const std::vector<size_t>& position,
                       const std::unordered_map<const Node*, PointwiseOp>& lowered) {
  const size_t n = groups.size();
  std::vector<size_t> last(n, 0), first_read(n, std::numeric_limits<size_t>::max());
  std::vector<std::vector<Node*>> inputs(n);
  auto in_group = [&](const Node* x, int g) {
    return group_of[x->index()] >= 0 && find(parent, group_of[x->index()]) == g;
  };
  for (size_t g = 0; g < n; ++g) {
    if (parent[g] != static_cast<int>(g)) continue;
    const int id = static_cast<int>(g);
    for (Node* m : groups[g].members) {
      last[g] = std::max(last[g], position[m->index()]);
      for (Node* user : m->users())
        if (!in_group(user, id)) first_read[g] = std::min(first_read[g], position[user->index()]);
      for (Node* in : lowered.at(m).inputs)
        if (!in_group(in, id)) inputs[g].push_back(in);
    }
  }
  std::map<std::tuple<std::vector<int64_t>, c10::ScalarType, bool>, int> latest;
  std::vector<int> read_by(graph.index_bound(), -1);
  for (Node* node : graph.nodes()) {
    if (group_of[node->index()] < 0) continue;
    const int b = find(parent, group_of[node->index()]);
    if (last[b] != position[node->index()] || groups[b].dtype == c10::kBool) continue;  // b does not end here
    auto [it, first] = latest.try_emplace({groups[b].shape, groups[b].dtype, groups[b].row}, b);
    if (first) continue;
    const int a = it->second;
    it->second = b;
    if (first_read[a] <= last[b]) continue;
    for (Node* in : inputs[b]) read_by[in->index()] = b;
    bool shared = false;
    for (Node* in : inputs[a]) shared = shared || read_by[in->index()] == b;
    if (!shared) continue;
    auto& into = groups[b].members;
    into.insert(into.end(), groups[a].members.begin(), groups[a].members.end());
    groups[a].members.clear();
    parent[a] = b;
    // A reader of b's values among a's members is inside now: counting it
    // only keeps a later group from joining.
    first_read[b] = std::min(first_read[a], first_read[b]);
    inputs[b].insert(inputs[b].end(), inputs[a].begin(), inputs[a].end());
  }
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
      const bool reduction = it->second.reduction != Reduction::none;
      const std::vector<int64_t>& out = tensor_meta(*n)->shape;
      const c10::ScalarType dtype = it->second.compute;
      const std::vector<int64_t>& space = reduction ? tensor_meta(*it->second.inputs[0])->shape : out;
      for (Node* in : it->second.inputs) {
        if (group_of[in->index()] < 0) continue;
        int g = find(parent, group_of[in->index()]);
        if (!groups[g].open || !fits(groups[g], space, out, dtype, reduction) || g == joined) continue;
        if (joined < 0) {
          joined = g;
          continue;
        }
        if (groups[g].shape != groups[joined].shape || !same_compute(groups[g].dtype, groups[joined].dtype))
          continue;  // two loops over different spaces or types
        groups[joined].row = groups[g].row = groups[joined].row || groups[g].row;
        groups[joined].dtype = groups[g].dtype = joint_compute(groups[g].dtype, groups[joined].dtype);
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
        groups.push_back({space, dtype, {}, true, false});
        parent.push_back(joined);
      }
      groups[joined].row = groups[joined].row || reduction;
      groups[joined].dtype = joint_compute(groups[joined].dtype, dtype);
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

  fuse_horizontally(graph, groups, parent, group_of, position, lowered);

  std::vector<Kernel> kernels;
  for (size_t g = 0; g < groups.size(); ++g) {
    // A kernel of masks alone has no S to compute in: ATen runs those.
    if (parent[g] != static_cast<int>(g) || groups[g].members.size() < 2 || groups[g].dtype == c10::kBool)
      continue;
    Kernel k;
    k.shape = groups[g].shape;
    k.row = groups[g].row;
    k.dtype = groups[g].dtype;
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

void order_loops(std::vector<Kernel>& kernels) {
  for (Kernel& k : kernels) {
    k.order.resize(k.shape.size());
    std::iota(k.order.begin(), k.order.end(), 0);
    if (!k.row)
      for (Node* in : k.inputs) {
        const passes::TensorMetadata* m = tensor_meta(*in);
        if (m->shape != k.shape) continue;
        if (auto order = dense_order(m->shape, m->stride)) k.order = std::move(*order);
        break;
      }
    std::vector<int64_t> strides = dense_strides(k.shape, k.order);
    for (Node* out : k.outputs) {
      const passes::TensorMetadata& m = *tensor_meta(*out);
      out->meta().set("tensor_meta", m.shape == k.shape ? with_strides(m, strides) : contiguous(m));
    }
  }
}

}  // namespace fx::compile_detail
