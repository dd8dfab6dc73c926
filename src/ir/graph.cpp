#include <fx/error.h>
#include <fx/graph.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <ostream>
#include <type_traits>
#include <unordered_set>

#include "block_memory.h"
#include "namespace.h"
#include "python_names.h"
#include "repr.h"
#include "target_entry.h"
#include "visit.h"

namespace fx {

namespace {
constexpr uint64_t kMaxOrder = std::numeric_limits<uint64_t>::max();
// Gap left between appended nodes, so that insertions in the middle rarely
// need to renumber their neighbours.
constexpr uint64_t kSpacing = uint64_t{1} << 32;

using detail::quoted;
}  // namespace

// ---- insert points ---------------------------------------------------------

InsertPoint::InsertPoint(Graph* g, Node* anchor, bool after)
    : graph_(g), saved_anchor_(g->insert_anchor_), saved_after_(g->insert_after_) {
  g->insert_anchor_ = anchor;
  g->insert_after_ = after;
}

InsertPoint::InsertPoint(InsertPoint&& o) noexcept
    : graph_(o.graph_), saved_anchor_(o.saved_anchor_), saved_after_(o.saved_after_) {
  o.graph_ = nullptr;
}

InsertPoint::~InsertPoint() {
  if (graph_) {
    graph_->insert_anchor_ = saved_anchor_;
    graph_->insert_after_ = saved_after_;
  }
}

InsertPoint Graph::inserting_before(Node* n) {
  if (n == nullptr) return InsertPoint(this, root_, true);
  if (&n->graph() != this || n->erased())
    throw GraphError("inserting_before: node " + quoted(n) + " is not a live node of this graph");
  return InsertPoint(this, n, false);
}

InsertPoint Graph::inserting_after(Node* n) {
  if (n == nullptr) return InsertPoint(this, root_, false);
  if (&n->graph() != this || n->erased())
    throw GraphError("inserting_after: node " + quoted(n) + " is not a live node of this graph");
  return InsertPoint(this, n, true);
}

// ---- construction ----------------------------------------------------------

Graph::Graph() : names_(std::make_unique<detail::Namespace>()) {
  root_ = allocate_node();
  root_->is_root_ = true;
  root_->prev_ = root_->next_ = root_;
  insert_anchor_ = root_;
}

Graph::~Graph() = default;

void Graph::reserve(size_t n) { names_->reserve(size_ + n); }

Graph::NodeList::iterator Graph::NodeList::begin() const {
  return iterator(raw_step(g_->root_, reverse_), g_->root_, reverse_);
}
Graph::NodeList::iterator Graph::NodeList::end() const { return iterator(g_->root_, g_->root_, reverse_); }

// The arrays come from the blocks of destroyed graphs where they can
// (block_memory.h): a fresh array's pages fault in one by one.
Graph::Block::Block(size_t capacity)
    : nodes_(static_cast<Node*>(detail::acquire_block_memory(capacity * sizeof(Node)))),
      bodies_(static_cast<Node::Body*>(detail::acquire_block_memory(capacity * sizeof(Node::Body)))),
      capacity_(capacity) {
  static_assert(alignof(Node) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ &&
                alignof(Node::Body) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
}

Graph::Block::Block(Block&& o) noexcept
    : nodes_(o.nodes_), bodies_(o.bodies_), capacity_(o.capacity_), used_(o.used_) {
  o.nodes_ = nullptr;
  o.bodies_ = nullptr;
  o.used_ = 0;
}

Graph::Block::~Block() {
  static_assert(std::is_trivially_destructible_v<Node>);
  for (size_t i = 0; i < used_; ++i) bodies_[i].~Body();
  detail::release_block_memory(nodes_, capacity_ * sizeof(Node));
  detail::release_block_memory(bodies_, capacity_ * sizeof(Node::Body));
}

Node* Graph::Block::make_node() {
  Node* n = new (nodes_ + used_) Node();
  n->b_ = new (bodies_ + used_) Node::Body();
  ++used_;
  return n;
}

Node* Graph::allocate_node() {
  if (blocks_.empty() || blocks_.back().full())
    blocks_.emplace_back(blocks_.empty() ? kFirstBlockNodes
                                         : std::min(2 * blocks_.back().capacity(), kMaxBlockNodes));
  if (next_index_ == UINT32_MAX)
    throw GraphError("a graph holds at most 4294967295 nodes, erased ones included");
  Node* n = blocks_.back().make_node();
  n->b_->graph = this;
  n->index_ = next_index_++;
  return n;
}

void Graph::link_between(Node* n, Node* prev, Node* next) {
  n->prev_ = prev;
  n->next_ = next;
  prev->next_ = n;
  next->prev_ = n;
  assign_order(n);
}

void Graph::unlink(Node* n) {
  n->prev_->next_ = n->next_;
  n->next_->prev_ = n->prev_;
  // n keeps its own links so that an iterator standing on it can move on.
}

// Order keys make "is a before b" O(1). A new node takes the middle of the
// gap between its neighbours; when there is none, the smallest run of
// following nodes whose key range is roomy enough is spread out again.
void Graph::assign_order(Node* n) {
  uint64_t lo = n->prev_ == root_ ? 0 : n->prev_->order_;
  Node* next = n->next_;
  if (next == root_) {
    uint64_t room = kMaxOrder - lo;
    if (room >= 2) {
      n->order_ = lo + (room >= 2 * kSpacing ? kSpacing : room / 2);
      return;
    }
  } else if (next->order_ - lo >= 2) {
    n->order_ = lo + (next->order_ - lo) / 2;
    return;
  }
  size_t count = 1;
  Node* end = next;
  while (true) {
    uint64_t hi = end == root_ ? kMaxOrder : end->order_;
    uint64_t gap = (hi - lo) / (count + 1);
    if (end == root_ && gap > kSpacing) gap = kSpacing;
    if (gap > count || (end == root_ && gap >= 2)) {
      Node* cur = n;
      for (size_t i = 1; i <= count; ++i, cur = cur->next_) cur->order_ = lo + gap * i;
      return;
    }
    if (end == root_) break;
    end = end->next_;
    ++count;
  }
  // The key space is exhausted: renumber the whole list evenly.
  uint64_t gap = kMaxOrder / (size_ + 3);
  if (gap > kSpacing) gap = kSpacing;
  uint64_t k = 0;
  for (Node* cur = root_->next_; cur != root_; cur = cur->next_) cur->order_ = (k += gap);
}

void Graph::bucket_add(Node* n) {
  if (buckets_indexed_.load(std::memory_order_relaxed)) bucket_link(n);
}

void Graph::bucket_link(Node* n) const {
  Bucket& b = buckets_[BucketKey{n->op_, n->b_->target.entry()}];
  n->b_->bucket_prev = b.tail;
  n->b_->bucket_next = nullptr;
  (b.tail ? b.tail->b_->bucket_next : b.head) = n;
  b.tail = n;
}

void Graph::bucket_remove(Node* n) {
  if (!buckets_indexed_.load(std::memory_order_relaxed)) return;
  Bucket& b = buckets_[BucketKey{n->op_, n->b_->target.entry()}];
  (n->b_->bucket_prev ? n->b_->bucket_prev->b_->bucket_next : b.head) = n->b_->bucket_next;
  (n->b_->bucket_next ? n->b_->bucket_next->b_->bucket_prev : b.tail) = n->b_->bucket_prev;
  n->b_->bucket_prev = n->b_->bucket_next = nullptr;
}

Node* Graph::create_node(Op op, Target target, Args args, Kwargs kwargs, std::optional<std::string> name,
                         std::optional<std::string> type) {
  const std::string& t = target.str();
  if (t.empty())
    throw GraphError(std::string("cannot create a ") + std::string(op_name(op)) +
                     " node with an empty target");
  if (op == Op::output && output_)
    throw GraphError("the graph already has an output node " + quoted(output_) +
                     "; a graph has one output: change its args (Node::set_args) or erase it first");
  if (insert_anchor_->erased_)
    throw GraphError("the insert point " + quoted(insert_anchor_) + " was erased; set a new one");

  Node* prev = insert_after_ ? insert_anchor_ : insert_anchor_->prev_;
  Node* next = insert_after_ ? insert_anchor_->next_ : insert_anchor_;
  if (op == Op::output && next != root_)
    throw GraphError("the output node must be the last node: it cannot be inserted before " + quoted(next));
  if (op != Op::output && output_ && prev == output_)
    throw GraphError(std::string("cannot insert a ") + std::string(op_name(op)) + " node (target " + t +
                     ") after the output node " + quoted(output_) +
                     "; insert it before the output (Graph::inserting_before)");

  Node* n = allocate_node();
  n->op_ = op;
  n->b_->target = target;
  link_between(n, prev, next);
  // Until it is named, errors call the node <new node> (detail::quoted).
  try {
    detail::visit_nodes(args, kwargs, [&](Node* in) { n->check_input(in); });
    const detail::TargetEntry* e = target.entry();
    // A function's node is named after the function (`add`), any other
    // after its target's text (`layer1_0_conv1`).
    const bool as_function = op == Op::call_function;
    const std::string& hint = as_function ? e->name_hint : e->str_hint;
    if (name)
      n->b_->name = names_->create_name(*name, nullptr);
    else if (as_function ? e->name_hint_plain : e->str_hint_plain)
      n->b_->name = names_->create_plain_name(hint);
    else
      n->b_->name = names_->create_name(hint, nullptr);
  } catch (...) {
    unlink(n);
    n->erased_ = true;
    throw;
  }
  n->b_->args = std::move(args);
  n->b_->kwargs = std::move(kwargs);
  n->link_uses();
  n->b_->type = std::move(type);
  bucket_add(n);
  ++size_;
  if (op == Op::output) output_ = n;
  return n;
}

Node* Graph::placeholder(std::string_view name, std::optional<Argument> default_value,
                         std::optional<std::string> type) {
  Args args;
  if (default_value) args.push_back(std::move(*default_value));
  return create_node(Op::placeholder, Target(name), std::move(args), {}, std::nullopt, std::move(type));
}

Node* Graph::get_attr(std::string_view qualified_name, std::optional<std::string> type) {
  return create_node(Op::get_attr, Target(qualified_name), {}, {}, std::nullopt, std::move(type));
}

Node* Graph::call_function(Target fn, Args args, Kwargs kwargs, std::optional<std::string> type) {
  return create_node(Op::call_function, fn, std::move(args), std::move(kwargs), std::nullopt,
                     std::move(type));
}

Node* Graph::call_method(std::string_view method, Args args, Kwargs kwargs, std::optional<std::string> type) {
  return create_node(Op::call_method, Target(method), std::move(args), std::move(kwargs), std::nullopt,
                     std::move(type));
}

Node* Graph::call_module(std::string_view module_path, Args args, Kwargs kwargs,
                         std::optional<std::string> type) {
  return create_node(Op::call_module, Target(module_path), std::move(args), std::move(kwargs), std::nullopt,
                     std::move(type));
}

Node* Graph::output(Argument result, std::optional<std::string> type) {
  return create_node(Op::output, Target("output"), {std::move(result)}, {}, std::nullopt, std::move(type));
}

Node* Graph::node_copy(const Node& node, const std::function<Argument(Node*)>& arg_transform) {
  auto [args, kwargs] = map_args(node, arg_transform);
  Node* n =
      create_node(node.op(), node.target(), std::move(args), std::move(kwargs), node.name(), node.type());
  n->b_->meta = node.b_->meta;
  return n;
}

Argument Graph::graph_copy(const Graph& src, std::unordered_map<const Node*, Node*>& val_map,
                           const Node** src_output) {
  if (&src == this) throw GraphError("graph_copy: a graph cannot be copied into itself");
  auto lookup = [&](const Node* user) {
    return [&val_map, user](Node* n) -> Argument {
      auto it = val_map.find(n);
      if (it == val_map.end())
        throw GraphError("graph_copy: node " + quoted(user) + " uses " + quoted(n) +
                         ", which has no copy in the value map");
      return it->second;
    };
  };
  for (Node* n : src.nodes()) {
    if (val_map.count(n)) continue;
    if (n->op() == Op::output) {
      if (src_output) *src_output = n;
      return n->args().empty() ? Argument() : map_arg(n->args()[0], lookup(n));
    }
    val_map[n] = node_copy(*n, lookup(n));
  }
  return None;
}

void Node::set_target(Target target) {
  if (erased_) throw GraphError("node " + quoted(this) + " was erased; it cannot be retargeted");
  if (target.str().empty()) throw GraphError("node " + quoted(this) + " cannot take an empty target");
  b_->graph->bucket_remove(this);
  b_->target = target;
  b_->graph->bucket_add(this);
}

void Node::set_name(std::string_view name) {
  if (erased_) throw GraphError("node " + quoted(this) + " was erased; it cannot be renamed");
  if (name == b_->name) return;
  std::string wanted(name);
  if (!b_->graph->names_->claim_shadowing(wanted))
    throw GraphError("cannot rename node " + quoted(this) + " to '" + wanted +
                     "': the name is taken in this graph, or is not a Python identifier, or is a keyword; "
                     "choose another name");
  // `x_01`, or a builtin's name (`sum`, `input`: torch.export names a
  // placeholder after forward's parameter): the code renames it, as torch.fx's.
  if (detail::Namespace::normal_form(wanted) != wanted || detail::is_python_builtin(wanted))
    b_->graph->names_normal_ = false;
  b_->name = std::move(wanted);
}

// ---- removal -----------------------------------------------------------------

void Graph::erase_node(Node* n) {
  if (n == nullptr || n->b_->graph != this || n->is_root_)
    throw GraphError("erase_node: the node is not a node of this graph");
  if (n->erased_) throw GraphError("erase_node: node " + quoted(n) + " was already erased");
  if (n->b_->num_users > 0) {
    std::string users;
    for (Node* u : n->users()) users += (users.empty() ? "" : ", ") + quoted(u);
    throw GraphError("cannot erase node " + quoted(n) + ": it still has " + std::to_string(n->b_->num_users) +
                     " user(s) (" + users + "); replace its uses first (Node::replace_all_uses_with)");
  }
  n->unlink_uses();
  // As in FX, the erased node keeps the shape of its arguments with None
  // for nodes; only an argument holding a node changes.
  auto forget_nodes = [](Argument& a) {
    if (a.node()) {
      a = Argument();
      return;
    }
    bool holds_node = false;
    detail::visit_nodes(a, [&](Node*) { holds_node = true; });
    if (holds_node) a = map_arg(a, [](Node*) { return Argument(); });
  };
  for (auto& a : n->b_->args) forget_nodes(a);
  for (auto& kv : n->b_->kwargs) forget_nodes(kv.second);
  unlink(n);
  bucket_remove(n);
  n->erased_ = true;
  --size_;
  if (output_ == n) output_ = nullptr;
  if (insert_anchor_ == n) {
    // Keep inserting where the node was.
    insert_anchor_ = insert_after_ ? n->prev_ : n->next_;
  }
}

bool Graph::eliminate_dead_code(const std::function<bool(const Node&)>& is_impure_node) {
  lint();
  bool changed = false;
  // Reversed, so that erasing a node has already dropped it from the user
  // counts of its inputs when they are visited.
  for (Node* n : nodes().reversed()) {
    if (n->b_->num_users == 0 && !(is_impure_node ? is_impure_node(*n) : n->is_impure())) {
      erase_node(n);
      changed = true;
    }
  }
  return changed;
}

// The node blocks hold the nodes in creation order.
void Graph::index_buckets() const {
  for (const Block& block : blocks_) {
    for (size_t i = 0; i < block.used(); ++i) {
      Node* n = block.node(i);
      if (!n->is_root_ && !n->erased_) bucket_link(n);
    }
  }
  buckets_indexed_.store(true, std::memory_order_release);
}

std::vector<Node*> Graph::find_nodes(Op op, Target target) const {
  if (!buckets_indexed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(buckets_mutex_);
    if (!buckets_indexed_.load(std::memory_order_relaxed)) index_buckets();
  }
  std::vector<Node*> out;
  auto it = buckets_.find(BucketKey{op, target.entry()});
  if (it == buckets_.end()) return out;
  for (Node* n = it->second.head; n; n = n->b_->bucket_next) out.push_back(n);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << g.to_string(); }
std::ostream& operator<<(std::ostream& os, const Node& n) { return os << n.format_node(); }

// Walking backwards, the first use of a value seen is its last.
Graph::LastUses Graph::last_uses(const std::vector<Node*>& order) const {
  LastUses uses;
  uses.nodes_.reserve(order.size());
  uses.end_.resize(order.size() + 1);
  std::vector<bool> seen(index_bound());
  std::unordered_set<const Node*> seen_elsewhere;  // nodes of other graphs (lint refuses them)
  for (size_t i = order.size(); i-- > 0;) {
    uses.end_[i + 1] = uses.nodes_.size();
    detail::visit_nodes(order[i]->b_->args, order[i]->b_->kwargs, [&](Node* in) {
      const bool first = in->b_->graph == this ? !seen[in->index_] : seen_elsewhere.insert(in).second;
      if (first) {
        if (in->b_->graph == this) seen[in->index_] = true;
        uses.nodes_.push_back(in);
      }
    });
  }
  uses.end_[0] = uses.nodes_.size();
  return uses;
}

Graph::Positions Graph::positions(const std::vector<Node*>& order) const {
  Positions p;
  p.graph_ = this;
  p.at_.resize(index_bound());
  for (size_t i = 0; i < order.size(); ++i) {
    const Node* n = order[i];
    if (n->b_->graph == this) p.at_[n->index_] = static_cast<uint32_t>(i + 1);  // else: no position
  }
  return p;
}

}  // namespace fx
