// Splits a joint graph of the forward and the backward into the two graphs
// that autograd runs apart, as AOTAutograd's min-cut partition does: the
// forward computes what its outputs and effects need and saves the values
// from which the backward computes what it reads, chosen to save the fewest
// bytes; the backward starts from those and the tangents.
#include "max_flow.h"
#include "phases.h"

#include <fx/error.h>
#include <fx/graph.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace fx::compile_detail {

namespace {

// The items of the joint graph's flat output tuple.
const std::vector<Argument>& output_items(const Graph& joint) {
  const Node* out = joint.output_node();
  if (!out || out->args().empty() || !out->args()[0].is<Tuple>())
    throw Error("fx::compile: the joint graph of the forward and the backward does not return a tuple");
  return out->args()[0].get<Tuple>().items;
}

// Per node (by its dense index): forward (depends on no tangent), backward
// (reads a tangent, or something that does), a tangent itself, or a forward
// value the backward computes again.
enum Side : uint8_t { forward, backward, tangent, recomputed };

// Whether the backward may compute `n` again from its inputs: a pure
// pointwise operator or a view, which fuse into the backward's kernels.
// Matrix products, convolutions, reductions and random operators are not
// (AOTAutograd's min-cut partition draws the same line).
bool recomputable(const Node& n) {
  if (n.op() != Op::call_function || n.is_impure()) return false;
  if (n.target().str() == "operator.getitem" || is_view(n)) return true;
  const c10::OperatorHandle* op = n.target().operator_handle();
  return op && op->hasSchema() && op->hasTag(at::Tag::pointwise);
}

// What saving a value costs that cannot be saved as it is: more than any
// tensor, and finite, so that a cut exists.
constexpr int64_t kUnsaveable = int64_t{1} << 40;

// What saving `n` costs: twice its bytes, and one more for a view, so that
// of a view and its base, which cost the same, the base is saved. A value
// that is no tensor (a tuple) cannot be saved as one.
int64_t save_cost(const Node& n) {
  const passes::TensorMetadata* m = tensor_meta(n);
  if (!m) return kUnsaveable;
  const int64_t numel = c10::multiply_integers(m->shape);
  return 2 * numel * static_cast<int64_t>(c10::elementSize(m->dtype)) + (is_view(n) ? 1 : 0);
}

// Whether a node of the graph writes `n` in place (the write-back of an
// updated input or buffer), so that what reads `n` after it reads the new
// value.
bool written_in_place(const Node& n) {
  for (const Node* user : n.users()) {
    if (!user->is_impure() || user->args().empty() || user->args()[0].node() != &n) continue;
    const c10::OperatorHandle* op = user->target().operator_handle();
    if (!op || !op->hasSchema() || op->schema().arguments().empty()) return true;  // unknown: it may
    const auto& alias = op->schema().arguments()[0].alias_info();
    if (alias && alias->isWrite()) return true;
  }
  return false;
}

// Which forward values to save so that the backward can compute what it
// reads (`read_back`) from them, saving the fewest bytes: AOTAutograd's
// min-cut rematerialization. Each forward node is an edge in -> out whose
// capacity is what saving it costs; an edge of infinite capacity from the source
// reaches the inputs and every node the forward computes anyway that the
// backward may not compute again, and one to the sink leaves each value the
// backward reads. A minimum cut crosses the edges of the values to save;
// of the minimum cuts, the one nearest the backward computes least again.
// The forward's needed pointwise values can thus be recomputed: GELU's
// output, which the next matrix product's gradient reads, is computed
// again from its input, which GELU's own gradient reads anyway. Parameters
// are never saved: the backward reads them itself.
std::vector<char> min_cut_saved(const Graph& graph, const std::vector<Side>& side,
                                const std::vector<char>& needed, const std::vector<char>& read_back) {
  const int bound = static_cast<int>(graph.index_bound());
  const int source = 2 * bound, sink = 2 * bound + 1;
  auto in = [](const Node* n) { return 2 * static_cast<int>(n->index()); };
  MaxFlow flow(2 * bound + 2);
  for (Node* n : graph.nodes()) {
    const size_t i = n->index();
    if (n->op() == Op::output || side[i] != forward) continue;
    // An input or buffer the forward writes in place holds its new value
    // when the backward runs: what the backward needs of its old one is
    // saved from the values computed from it, where a cut allows.
    const bool source_node = n->op() == Op::placeholder || n->op() == Op::get_attr;
    const bool written = source_node && written_in_place(*n);
    if (n->op() != Op::get_attr || written) {
      flow.add_edge(in(n), in(n) + 1, written ? kUnsaveable : save_cost(*n));
      if (source_node || (needed[i] && !recomputable(*n))) flow.add_edge(source, in(n), MaxFlow::kInfinite);
    }
    for (const Node* user : n->users())
      if (user->op() != Op::output && side[user->index()] == forward)
        flow.add_edge(in(n) + 1, in(user), MaxFlow::kInfinite);
    if (read_back[i]) flow.add_edge(in(n) + 1, sink, MaxFlow::kInfinite);
  }
  std::vector<char> saved(graph.index_bound(), 0);
  if (flow.run(source, sink) >= MaxFlow::kInfinite) {
    // No finite cut (a value the backward reads that cannot be saved):
    // save what it reads, as the default partition does.
    for (Node* n : graph.nodes())
      saved[n->index()] = static_cast<char>(read_back[n->index()] && n->op() != Op::get_attr);
    return saved;
  }
  const std::vector<char> reaches = flow.reaching(sink);
  for (Node* n : graph.nodes())
    saved[n->index()] =
        static_cast<char>(n->op() != Op::get_attr && n->op() != Op::output && side[n->index()] == forward &&
                          !reaches[in(n)] && reaches[in(n) + 1]);
  return saved;
}

}  // namespace

JointPartition partition_joint(GraphModule& joint, size_t num_outputs, size_t num_tangents) {
  const Graph& graph = joint.graph();
  const std::vector<Argument>& items = output_items(graph);
  if (items.size() < num_outputs + num_tangents)
    throw Error("fx::compile: the joint graph returns " + std::to_string(items.size()) +
                " values, fewer than its " + std::to_string(num_outputs) + " outputs and " +
                std::to_string(num_tangents) + " tangents");
  std::vector<Side> side(graph.index_bound(), forward);
  std::vector<Node*> tangents;
  for (size_t i = num_outputs; i < num_outputs + num_tangents; ++i) {
    Node* t = items[i].node();
    if (!t || t->op() == Op::placeholder || t->op() == Op::get_attr)
      throw Error("fx::compile: tangent " + std::to_string(i - num_outputs) +
                  " of the joint graph is not a value the capture made");
    side[t->index()] = tangent;
    tangents.push_back(t);
  }
  for (Node* n : graph.nodes()) {
    if (n->op() == Op::output || side[n->index()] == tangent) continue;
    for (Node* in : n->all_input_nodes())
      if (side[in->index()] != forward) side[n->index()] = backward;
  }
  // What the forward needs: its outputs, what has effects (a batch norm's
  // running statistics written back), and what they read.
  std::vector<char> needed(graph.index_bound(), 0);
  for (size_t i = 0; i < num_outputs; ++i)
    if (Node* o = items[i].node()) needed[o->index()] = 1;
  for (Node* n : graph.nodes().reversed()) {
    if (n->op() == Op::output || side[n->index()] != forward) continue;
    if (n->op() == Op::placeholder || n->is_impure()) needed[n->index()] = 1;
    if (needed[n->index()])
      for (Node* in : n->all_input_nodes()) needed[in->index()] = 1;
  }
  // What the backward reads of the forward's values: each is saved, or
  // computed again in the backward from saved values (min_cut_saved).
  std::vector<char> read_back(graph.index_bound(), 0);
  for (Node* n : graph.nodes())
    if (n->op() != Op::output && side[n->index()] == backward)
      for (Node* in : n->all_input_nodes())
        if (side[in->index()] == forward) read_back[in->index()] = 1;
  for (size_t i = num_outputs + num_tangents; i < items.size(); ++i)
    if (Node* g = items[i].node(); g && side[g->index()] == forward) read_back[g->index()] = 1;
  std::vector<char> is_saved = min_cut_saved(graph, side, needed, read_back);
  // The backward computes again what it reads and is not saved, back to
  // saved values and parameters (which it reads itself).
  std::vector<Node*> stack;
  for (Node* n : graph.nodes())
    if (read_back[n->index()]) stack.push_back(n);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (side[n->index()] != forward || is_saved[n->index()] || n->op() == Op::get_attr) continue;
    if (n->op() == Op::placeholder) {  // every cut saves these; an input is read, not computed
      is_saved[n->index()] = 1;
      continue;
    }
    side[n->index()] = recomputed;
    for (Node* in : n->all_input_nodes()) stack.push_back(in);
  }
  // The forward computes what it needs and what it saves.
  std::vector<char> in_forward(graph.index_bound(), 0);
  for (Node* n : graph.nodes().reversed()) {
    const size_t i = n->index();
    if (n->op() == Op::output || side[i] == backward || side[i] == tangent) continue;
    if (needed[i] || is_saved[i]) in_forward[i] = 1;
    if (in_forward[i])
      for (Node* in : n->all_input_nodes()) in_forward[in->index()] = 1;
  }
  std::vector<Node*> saved;
  for (Node* n : graph.nodes())
    if (is_saved[n->index()]) saved.push_back(n);
  auto in_backward = [&](const Node* n) {
    return n->op() != Op::output && (side[n->index()] == backward || side[n->index()] == recomputed);
  };

  auto backward_graph = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> bmap;
  for (Node* s : saved) {
    Node* p = backward_graph->placeholder(s->name());
    p->meta() = s->meta();
    bmap[s] = p;
  }
  for (size_t i = 0; i < tangents.size(); ++i) {
    Node* p = backward_graph->placeholder("tangents_" + std::to_string(i + 1));
    p->meta() = tangents[i]->meta();
    bmap[tangents[i]] = p;
  }
  auto bmapped = [&](Node* x) -> Argument {
    if (auto it = bmap.find(x); it != bmap.end()) return it->second;
    // A parameter the backward reads (a weight's transpose in a matrix
    // product's gradient): read it here, after the placeholders.
    if (x->op() != Op::get_attr)
      throw Error("fx::compile: the backward reads " + x->name() + ", which the forward does not save");
    return bmap[x] = backward_graph->node_copy(*x, [](Node*) -> Argument { return NoneType{}; });
  };
  for (Node* n : graph.nodes())
    if (in_backward(n)) bmap[n] = backward_graph->node_copy(*n, bmapped);
  std::vector<Argument> grads;
  for (size_t i = num_outputs + num_tangents; i < items.size(); ++i)
    grads.push_back(items[i].is_node() ? bmapped(items[i].node()) : items[i]);
  backward_graph->output(Tuple{std::move(grads)});
  backward_graph->eliminate_dead_code();

  // What only dead code read need not be saved.
  std::vector<Node*> kept;
  for (Node* s : saved) {
    Node* p = bmap.at(s);
    if (p->num_users() == 0)
      backward_graph->erase_node(p);
    else
      kept.push_back(s);
  }
  saved = std::move(kept);

  auto forward_graph = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> fmap;
  auto fmapped = [&](Node* x) -> Argument { return fmap.at(x); };
  for (Node* n : graph.nodes())
    if (in_forward[n->index()]) fmap[n] = forward_graph->node_copy(*n, fmapped);
  std::vector<Argument> forward_out;
  auto map_item = [](const Argument& a, auto& map) -> Argument {
    return a.is_node() ? Argument(map.at(a.node())) : a;
  };
  for (size_t i = 0; i < num_outputs; ++i) {
    if (items[i].is_node() && !in_forward[items[i].node()->index()])
      throw Error("fx::compile: output " + std::to_string(i) + " of the forward depends on a tangent");
    forward_out.push_back(map_item(items[i], fmap));
  }
  for (Node* s : saved) forward_out.push_back(fmap.at(s));
  forward_graph->output(Tuple{std::move(forward_out)});
  // The tangents' ones_like, and what only they read, are dead here.
  forward_graph->eliminate_dead_code();

  JointPartition p;
  p.num_saved = saved.size();
  p.forward = std::make_unique<GraphModule>(joint, std::move(forward_graph), "GraphModule");
  p.backward = std::make_unique<GraphModule>(joint, std::move(backward_graph), "GraphModule");
  return p;
}

}  // namespace fx::compile_detail
