// Splits a joint graph of the forward and the backward into the two graphs
// that autograd runs apart, as AOTAutograd's default partition does: the
// forward computes everything that does not depend on the tangents and
// saves what the backward reads; the backward starts from those and the
// tangents.
#include "phases.h"

#include <fx/error.h>
#include <fx/graph.h>

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

}  // namespace

JointPartition partition_joint(GraphModule& joint, size_t num_outputs, size_t num_tangents) {
  const Graph& graph = joint.graph();
  const std::vector<Argument>& items = output_items(graph);
  if (items.size() < num_outputs + num_tangents)
    throw Error("fx::compile: the joint graph returns " + std::to_string(items.size()) +
                " values, fewer than its " + std::to_string(num_outputs) + " outputs and " +
                std::to_string(num_tangents) + " tangents");
  // Per node (by its dense index): 0 forward, 1 backward (reads a tangent,
  // or something that does), 2 a tangent itself.
  enum Side : uint8_t { forward, backward, tangent };
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
  // running statistics written back), and what they read. The rest of what
  // does not depend on a tangent (silu's 1 - sigmoid(x) in its backward) is
  // computed in the backward, from saved values, where it fuses with the
  // tangent's arithmetic; computing it in the forward would save its result
  // instead of its input.
  std::vector<char> needed(graph.index_bound(), 0);
  for (size_t i = 0; i < num_outputs; ++i)
    if (Node* o = items[i].node()) needed[o->index()] = 1;
  for (Node* n : graph.nodes().reversed()) {
    if (n->op() == Op::output || side[n->index()] != forward) continue;
    if (n->op() == Op::placeholder || n->is_impure()) needed[n->index()] = 1;
    if (needed[n->index()])
      for (Node* in : n->all_input_nodes()) needed[in->index()] = 1;
  }
  // A parameter stays, and so does an element of a forward node's tuple
  // (batch norm's saved mean): the backward reads tensors, not tuples.
  auto stays = [&](const Node* n) {
    if (n->op() != Op::call_function) return true;
    if (n->target().str() != "operator.getitem") return false;
    const Node* of = n->args().empty() ? nullptr : n->args()[0].node();
    return of && side[of->index()] == forward && needed[of->index()];
  };
  for (Node* n : graph.nodes())
    if (side[n->index()] == forward && !needed[n->index()] && !stays(n)) side[n->index()] = backward;
  // A forward value the backward reads is saved, but a parameter: the
  // backward reads it itself.
  std::vector<Node*> saved;
  std::vector<char> is_saved(graph.index_bound(), 0);
  auto save = [&](Node* n) {
    if (side[n->index()] != forward || n->op() == Op::get_attr || is_saved[n->index()]) return;
    is_saved[n->index()] = 1;
    saved.push_back(n);
  };
  for (Node* n : graph.nodes())
    if (n->op() != Op::output && side[n->index()] == backward)
      for (Node* in : n->all_input_nodes()) save(in);
  for (size_t i = num_outputs + num_tangents; i < items.size(); ++i)
    if (Node* g = items[i].node()) save(g);
  // Saved in graph order, so that the backward's placeholders read as the
  // forward computed them.
  std::sort(saved.begin(), saved.end(), [](const Node* a, const Node* b) { return a->is_before(b); });

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
    if (n->op() != Op::output && side[n->index()] == backward)
      bmap[n] = backward_graph->node_copy(*n, bmapped);
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
    if (n->op() != Op::output && side[n->index()] == forward) fmap[n] = forward_graph->node_copy(*n, fmapped);
  std::vector<Argument> forward_out;
  auto map_item = [](const Argument& a, auto& map) -> Argument {
    return a.is_node() ? Argument(map.at(a.node())) : a;
  };
  for (size_t i = 0; i < num_outputs; ++i) {
    if (items[i].is_node() && side[items[i].node()->index()] != forward)
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
