#pragma once
// fx::Graph: the container of FX's IR, a doubly linked list of Nodes.
//
// A Graph represents one function: its placeholders are the inputs, the
// call_* and get_attr nodes the work, the single output node the return.
// The graph owns its nodes. It is neither copyable nor movable (nodes point
// back to it); copying is the explicit graph_copy.
//
// Invariants kept at every edit (violations throw fx::GraphError):
// - a node's arguments are nodes of this graph defined before it;
// - there is at most one output node, and nothing comes after it;
// - names are unique, generated the way torch.fx generates them.
//
// Every operation is linear in the size of what it touches: creating a node,
// erasing one, finding nodes by (op, target) and moving a node are O(1) plus
// the size of its arguments; naming is O(1) amortized (torch.fx 1.13 is
// quadratic when many nodes share a name).

#include <fx/argument.h>
#include <fx/node.h>
#include <fx/target.h>
#include <fx/tree_spec.h>

#include <atomic>
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fx {

namespace detail {
class Namespace;
}

// What a Graph needs to know of the module that owns it, to check get_attr
// and call_module targets and the purity of modules. GraphModule implements
// it; the IR knows nothing more about modules.
class OwningModule {
 public:
  virtual ~OwningModule() = default;
  virtual bool has_submodule(std::string_view qualified_name) const = 0;
  // has_submodule for a call_module node's target (lint asks this). An owner
  // may remember the answers by target while it recompiles.
  virtual bool has_target_module(const Target& target) const { return has_submodule(target.str()); }
  // A parameter, buffer, submodule or other attribute.
  virtual bool has_attribute(std::string_view qualified_name) const = 0;
  // Node::impurity of a call_module node with this target (a Dropout in
  // training is random).
  virtual Impurity module_impurity(const Target& /*target*/) const { return Impurity::none; }
};

// The Python source of a graph's forward, and the globals it refers to
// (name in the source -> the qualified name of what it means).
struct PythonCode {
  std::string src;
  std::vector<std::pair<std::string, std::string>> globals;
};

class Graph;

// Sets where create_node inserts, for the guard's lifetime (FX's
// `with graph.inserting_before(n):`).
class InsertPoint {
 public:
  InsertPoint(InsertPoint&& o) noexcept;
  InsertPoint(const InsertPoint&) = delete;
  InsertPoint& operator=(const InsertPoint&) = delete;
  InsertPoint& operator=(InsertPoint&&) = delete;
  ~InsertPoint();

 private:
  friend class Graph;
  InsertPoint(Graph* g, Node* anchor, bool after);
  Graph* graph_;
  Node* saved_anchor_;
  bool saved_after_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // ---- iteration --------------------------------------------------------
  class NodeList;
  // The live nodes in order; `nodes().reversed()` walks backwards. Erasing
  // or inserting nodes while iterating is safe.
  NodeList nodes() const;
  size_t size() const { return size_; }
  // One more than the largest Node::index() of this graph (erased nodes
  // keep theirs): the size of an analysis's side array over its nodes.
  size_t index_bound() const { return next_index_; }
  // Room for the names of n more nodes without growing the name table (a
  // builder that knows about how many nodes it makes: growth rehashes).
  void reserve(size_t n);
  // The output node, or nullptr while the graph has none.
  Node* output_node() const { return output_; }

  // ---- creating nodes ---------------------------------------------------
  // Creates a node at the insert point (the end by default). The name is
  // `name` if given, else derived from the target, made unique.
  Node* create_node(Op op, Target target, Args args = {}, Kwargs kwargs = {},
                    std::optional<std::string> name = std::nullopt,
                    std::optional<std::string> type = std::nullopt);
  Node* placeholder(std::string_view name, std::optional<Argument> default_value = std::nullopt,
                    std::optional<std::string> type = std::nullopt);
  Node* get_attr(std::string_view qualified_name, std::optional<std::string> type = std::nullopt);
  Node* call_function(Target fn, Args args = {}, Kwargs kwargs = {},
                      std::optional<std::string> type = std::nullopt);
  Node* call_method(std::string_view method, Args args = {}, Kwargs kwargs = {},
                    std::optional<std::string> type = std::nullopt);
  Node* call_module(std::string_view module_path, Args args = {}, Kwargs kwargs = {},
                    std::optional<std::string> type = std::nullopt);
  Node* output(Argument result, std::optional<std::string> type = std::nullopt);

  // Insert before / after `n` (nullptr: the beginning / the end of the graph)
  // until the returned guard is destroyed. As in FX, inserting_after(n)
  // puts each new node right after n, so successive nodes come out in
  // reverse order.
  [[nodiscard]] InsertPoint inserting_before(Node* n = nullptr);
  [[nodiscard]] InsertPoint inserting_after(Node* n = nullptr);

  // Copies `node` (of any graph) here, mapping its input nodes through
  // arg_transform; meta is copied too.
  Node* node_copy(const Node& node, const std::function<Argument(Node*)>& arg_transform);
  // Copies every node of `src` here except its output, filling val_map
  // (src node -> new node; entries already there are used as they are).
  // Returns src's output value mapped into this graph (None if src has no
  // output); *src_output receives src's output node when asked.
  Argument graph_copy(const Graph& src, std::unordered_map<const Node*, Node*>& val_map,
                      const Node** src_output = nullptr);

  // ---- removing nodes ---------------------------------------------------
  // Throws fx::GraphError naming the node and its users if it still has any.
  void erase_node(Node* n);
  // Erases every node without users that is not impure, last to first, after
  // a lint (as torch.fx). Returns whether anything changed. Impure means
  // Node::is_impure (fx/impurity.h), or `is_impure_node` when given
  // (torch.fx's is_impure_node argument).
  bool eliminate_dead_code(const std::function<bool(const Node&)>& is_impure_node = nullptr);

  // ---- queries ----------------------------------------------------------
  // The live nodes with this op and target, in creation order (a node
  // retargeted after the first query counts as created then). O(k), after
  // a first query that indexes the graph in O(n): building a graph pays
  // nothing for the index until someone asks.
  std::vector<Node*> find_nodes(Op op, Target target) const;
  // Checks every invariant and throws fx::LintError naming the first node
  // that breaks one.
  void lint() const;
  // Where each value dies, for code and executors that free values early:
  // last_uses(order)[i] lists the nodes that the i-th node of `order` (this
  // graph's nodes(), in order) is the last user of, each once. O(n), no
  // hashing; all the lists share one array.
  class LastUses {
   public:
    std::span<Node* const> operator[](size_t i) const {
      return {nodes_.data() + end_[i + 1], end_[i] - end_[i + 1]};
    }
    size_t size() const { return end_.empty() ? 0 : end_.size() - 1; }  // of the order given

   private:
    friend class Graph;
    std::vector<Node*> nodes_;  // the lists, the last node's first
    std::vector<size_t> end_;   // the i-th list is nodes_[end_[i+1], end_[i])
  };
  LastUses last_uses(const std::vector<Node*>& order) const;

  // The position of each node of `order` (this graph's nodes(), in order),
  // read in O(1): a table by node index, 4 bytes per node the graph ever
  // made. A node outside `order`, of another graph, or made after the
  // table, has no position.
  class Positions {
   public:
    std::optional<size_t> of(const Node* n) const {
      if (n->b_->graph != graph_ || n->index_ >= at_.size() || at_[n->index_] == 0) return std::nullopt;
      return static_cast<size_t>(at_[n->index_] - 1);
    }

   private:
    friend class Graph;
    const Graph* graph_ = nullptr;
    std::vector<uint32_t> at_;  // position + 1, or 0
  };
  Positions positions(const std::vector<Node*>& order) const;

  OwningModule* owning_module() const { return owning_module_; }
  void set_owning_module(OwningModule* m) { owning_module_ = m; }

  // Set when the graph's inputs and output are flattened structures
  // (torch.fx's _PyTreeCodeGen, from structured concrete_args): python_code
  // then flattens the arguments and rebuilds the output as FX's code does.
  const std::optional<PyTreeInfo>& pytree_info() const { return pytree_info_; }
  void set_pytree_info(std::optional<PyTreeInfo> info) { pytree_info_ = std::move(info); }

  // ---- text -------------------------------------------------------------
  // What torch.fx prints for `print(graph)` (with `[num_users=N]`).
  std::string to_string() const;
  // The generated `forward`, exactly as torch.fx's `graph.python_code(root_module).src`.
  PythonCode python_code(std::string_view root_module = "self") const;
  // The same, for a caller that has the graph's nodes in order and their
  // last_uses already (GraphModule::recompile needs them too).
  PythonCode python_code(std::string_view root_module, const std::vector<Node*>& order,
                         const LastUses& dies_at) const;
  // The table of `graph.print_tabular()`: opcode, name, target, args, kwargs.
  std::string print_tabular() const;

 private:
  friend class Node;
  friend class InsertPoint;

  static Node* raw_step(const Node* n, bool reverse) { return reverse ? n->prev_ : n->next_; }
  Node* allocate_node();
  void insert_at_insert_point(Node* n);
  void link_between(Node* n, Node* prev, Node* next);
  void unlink(Node* n);
  void assign_order(Node* n);
  void renumber_from(Node* first_gap, uint64_t lo, uint64_t hi, size_t count);
  void bucket_add(Node* n);
  void bucket_link(Node* n) const;
  void bucket_remove(Node* n);
  void index_buckets() const;
  uint64_t next_mark() { return ++mark_epoch_; }

  Node* root_;  // sentinel: root_->next_ is the first node, root_->prev_ the last
  // Nodes live in blocks: created without a heap allocation each,
  // contiguous for iteration, never moved, freed with the graph. A block
  // holds twice as many nodes as the one before, up to kMaxBlockNodes, so a
  // walk over a large graph crosses few block boundaries (where the
  // processor's prefetching starts over) and a small graph stays small.
  // A node and its body are constructed when the graph makes the node, not
  // with the block: a large block made whole would touch memory the graph
  // may never use.
  class Block {
   public:
    explicit Block(size_t capacity);
    Block(Block&& o) noexcept;
    Block& operator=(Block&&) = delete;
    ~Block();
    bool full() const { return used_ == capacity_; }
    size_t capacity() const { return capacity_; }
    size_t used() const { return used_; }
    Node* node(size_t i) const { return nodes_ + i; }
    Node* make_node();  // the next node, with its body

   private:
    Node* nodes_;
    Node::Body* bodies_;
    size_t capacity_;
    size_t used_ = 0;
  };
  static constexpr size_t kFirstBlockNodes = 32, kMaxBlockNodes = 16384;
  std::vector<Block> blocks_;
  size_t size_ = 0;
  Node* insert_anchor_;  // new nodes go before (or after) this node
  bool insert_after_ = false;
  Node* output_ = nullptr;
  uint64_t mark_epoch_ = 0;
  uint32_t next_index_ = 0;
  std::unique_ptr<detail::Namespace> names_;
  // Whether every node name is in normal form (as create_name returns it),
  // so that python_code need not check it: only Node::set_name can break it.
  bool names_normal_ = true;
  struct BucketKey {
    Op op;
    const void* target;
    bool operator==(const BucketKey&) const = default;
  };
  struct BucketHash {
    size_t operator()(const BucketKey& k) const noexcept {
      return std::hash<const void*>()(k.target) * 31 + static_cast<size_t>(k.op);
    }
  };
  struct Bucket {
    Node* head = nullptr;
    Node* tail = nullptr;
  };
  // find_nodes' index, built by the first query (under the mutex: readers of
  // a const graph may query at once) and then kept up to date by each edit.
  mutable std::unordered_map<BucketKey, Bucket, BucketHash> buckets_;
  mutable std::atomic<bool> buckets_indexed_ = false;
  mutable std::mutex buckets_mutex_;
  OwningModule* owning_module_ = nullptr;
  std::optional<PyTreeInfo> pytree_info_;
};

class Graph::NodeList {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node*;
    using difference_type = std::ptrdiff_t;
    using pointer = Node* const*;
    using reference = Node*;
    iterator() = default;
    iterator(Node* cur, const Node* root, bool reverse) : cur_(cur), root_(root), reverse_(reverse) {
      skip_erased();
    }
    Node* operator*() const { return cur_; }
    iterator& operator++() {
      cur_ = step(cur_);
      skip_erased();
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const { return cur_ == o.cur_; }

   private:
    Node* step(Node* n) const { return Graph::raw_step(n, reverse_); }
    void skip_erased() {
      while (cur_ != root_ && erased(cur_)) cur_ = step(cur_);
    }
    static bool erased(const Node* n) { return n->erased(); }
    Node* cur_ = nullptr;
    const Node* root_ = nullptr;
    bool reverse_ = false;
  };

  NodeList(const Graph* g, bool reverse) : g_(g), reverse_(reverse) {}
  iterator begin() const;
  iterator end() const;
  NodeList reversed() const { return NodeList(g_, !reverse_); }
  size_t size() const { return g_->size(); }
  // One walk: constructing from the iterators would walk the list twice
  // (to count, then to copy), and each step can be a cache miss.
  std::vector<Node*> to_vector() const {
    std::vector<Node*> out;
    out.reserve(size());
    for (Node* n : *this) out.push_back(n);
    return out;
  }

 private:
  const Graph* g_;
  bool reverse_;
};

inline Graph::NodeList Graph::nodes() const { return NodeList(this, false); }

std::ostream& operator<<(std::ostream& os, const Graph& g);
std::ostream& operator<<(std::ostream& os, const Node& n);

}  // namespace fx
