#include <fx/passes/cse.h>

#include <fx/error.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "../ir/probe_table.h"
#include "branch_modules.h"
#include "copy_graph.h"

namespace fx::passes {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Hashes an argument by kind and value, consistently with Argument::operator==.
size_t hash_arg(const Argument& a) {
  const auto& s = a.storage();
  size_t h = s.index();
  auto seq = [&](const std::vector<Argument>& items) {
    for (const auto& i : items) h = mix(h, hash_arg(i));
  };
  std::visit(Overloaded{
                 [&](const NoneType&) {},
                 [&](const EllipsisType&) {},
                 [&](bool b) { h = mix(h, b); },
                 [&](int64_t i) { h = mix(h, std::hash<int64_t>()(i)); },
                 // -0.0 == 0.0: hash them alike; NaN never compares equal, any hash will do.
                 [&](double d) { h = mix(h, d == 0.0 ? 0 : std::bit_cast<uint64_t>(d)); },
                 [&](const std::string& str) { h = mix(h, std::hash<std::string>()(str)); },
                 [&](Node* n) { h = mix(h, std::hash<const void*>()(n)); },
                 [&](const Tuple& t) { seq(t.items); },
                 [&](const List& l) { seq(l.items); },
                 [&](const Slice& sl) { seq(sl.parts); },
                 [&](const Dict& d) {
                   for (const auto& [k, v] : d.items)
                     h = mix(mix(h, std::hash<std::string>()(k)), hash_arg(v));
                 },
                 [&](c10::ScalarType t) { h = mix(h, static_cast<size_t>(t)); },
                 [&](c10::Device d) { h = mix(h, std::hash<c10::Device>()(d)); },
                 [&](c10::Layout l) { h = mix(h, static_cast<size_t>(l)); },
                 [&](c10::MemoryFormat m) { h = mix(h, static_cast<size_t>(m)); },
                 [&](const Opaque& o) { h = mix(h, std::hash<const void*>()(o.value.get())); },
             },
             s);
  return h;
}

// A node's signature: (op, target, args, kwargs).
size_t signature_hash(const Node* n) {
  size_t h = mix(static_cast<size_t>(n->op()), std::hash<Target>()(n->target()));
  for (const auto& a : n->args()) h = mix(h, hash_arg(a));
  for (const auto& [k, v] : n->kwargs()) h = mix(mix(h, std::hash<std::string>()(k)), hash_arg(v));
  return h;
}

bool same_signature(const Node* a, const Node* b) {
  return a->op() == b->op() && a->target() == b->target() && a->args() == b->args() &&
         a->kwargs() == b->kwargs();
}

// The candidates kept so far, by signature, in the IR's open-addressing
// table: no allocation per node, as a node-based hash set makes.
struct SignatureSlot {
  size_t hash = 0;
  Node* node = nullptr;
  bool empty() const { return node == nullptr; }
  uint64_t place() const { return hash; }
};
class SignatureTable : public fx::detail::ProbeTable<SignatureSlot> {
 public:
  explicit SignatureTable(size_t capacity) { reserve(capacity); }

  // The node kept with n's signature, or nullptr once n is kept.
  Node* find_or_keep(Node* n) {
    make_room();
    const size_t hash = signature_hash(n);
    size_t i = home(hash);
    for (; !slots_[i].empty(); i = next(i))
      if (slots_[i].hash == hash && same_signature(slots_[i].node, n)) return slots_[i].node;
    slots_[i] = SignatureSlot{hash, n};
    ++size_;
    return nullptr;
  }
};

// torch.fx's get_aten_target: an overload's packet (torch.ops.aten.add_.Tensor -> torch.ops.aten.add_).
bool banned(const Node* n, const std::unordered_set<Target>& banned_ops) {
  if (banned_ops.empty()) return false;
  const Target t = n->target();
  if (banned_ops.count(t)) return true;
  const OpsName* ops = t.ops_name();
  if (!ops || ops->is_packet()) return false;
  return banned_ops.count(Target("torch.ops." + ops->ns + "." + ops->op)) > 0;
}

}  // namespace

std::vector<Target> get_CSE_banned_ops() {
  std::vector<Target> out;
  for (const char* name :
       {"dropout", "_fused_dropout", "_standard_gamma", "bernoulli", "multinomial", "native_dropout",
        "normal",  "poisson",        "binomial",        "rrelu",     "rand_like",   "rand",
        "randint", "randn",          "randperm",        "add_",      "sub_",        "mul_",
        "div_",    "pow_",           "lerp_",           "relu_",     "sigmoid_",    "tanh_"})
    out.emplace_back(std::string("torch.ops.aten.") + name);
  return out;
}

bool cse(Graph& graph, const std::vector<Target>& banned_ops) {
  std::unordered_set<Target> banned_set(banned_ops.begin(), banned_ops.end());
  // Impurity is decided once per node; the values in-place calls write are
  // found first, so that no read of them merges across a write.
  std::vector<Node*> candidates;
  candidates.reserve(graph.size());
  std::unordered_set<const Node*> mutated;
  for (Node* n : graph.nodes()) {
    if (n->op() == Op::placeholder || n->op() == Op::output || n->op() == Op::get_attr) continue;
    Impurity why = n->impurity();
    if (why == Impurity::in_place) for_each_written_input(*n, [&](Node* w) { mutated.insert(w); });
    if (why == Impurity::none && !banned(n, banned_set)) candidates.push_back(n);
  }
  SignatureTable kept(candidates.size());
  bool modified = false;
  for (Node* n : candidates) {
    bool reads_mutated = false;
    if (!mutated.empty())
      for (Node* in : n->all_input_nodes()) reads_mutated = reads_mutated || mutated.count(in);
    if (reads_mutated) continue;
    // Earlier merges have already rewritten n's arguments to the survivors.
    Node* same = kept.find_or_keep(n);
    if (!same) continue;
    n->replace_all_uses_with(same);
    graph.erase_node(n);
    modified = true;
  }
  return modified;
}

bool cse(GraphModule& gm, const std::vector<Target>& banned_ops) {
  bool modified = false;
  for (GraphModule* branch : detail::branch_modules(gm)) modified = cse(*branch, banned_ops) || modified;
  modified = cse(gm.graph(), banned_ops) || modified;
  if (modified) gm.recompile();
  return modified;
}

// As torch.fx's CSEPass: a new GraphModule from gm and the reduced copy of
// its graph, compiled once. While the copy is reduced, gm answers for its
// call_module targets (a training Dropout is impure): the new module
// shares those very submodules.
CSEPass::Result CSEPass::call(GraphModule& gm) const {
  std::unique_ptr<Graph> graph = detail::copy_graph(gm.graph());
  graph->set_owning_module(&gm);
  const bool modified = cse(*graph, banned_ops_);
  graph->set_owning_module(nullptr);
  return Result{std::make_unique<GraphModule>(gm, std::move(graph)), modified};
}

}  // namespace fx::passes
