#pragma once
// fx::Node: one operation in a Graph.
//
// Each node has an opcode (`op`) that says what it does:
//
// | op            | target                        | args / kwargs                          |
// |---------------|-------------------------------|----------------------------------------|
// | placeholder   | the argument's name (`x`)     | args: () or (default value,)           |
// | get_attr      | attribute path (`layer1.w`)   | unused                                 |
// | call_function | function (`operator.add`)     | the call's arguments                   |
// | call_method   | method name (`clamp`)         | args[0] is `self`, then the arguments  |
// | call_module   | submodule path (`linear`)     | the module's forward arguments         |
// | output        | `output`                      | args[0] is the returned value          |
//
// `name` is the unique name of the value the node produces; it is what the
// graph printout shows after `%` and what the generated Python code assigns.
// `users` are the nodes that read this node's value, in the order they
// started reading it. Assigning args or kwargs keeps `users` of every input
// up to date.
//
// Nodes are created by a Graph and owned by it. An erased node stays valid
// (marked erased, with its arguments cleared) until its Graph is destroyed,
// so iterating while erasing is safe.

#include <fx/argument.h>
#include <fx/impurity.h>
#include <fx/meta.h>
#include <fx/target.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

class Graph;

enum class Op : uint8_t { placeholder, get_attr, call_function, call_method, call_module, output };

std::string_view op_name(Op op);
// Parses an opcode name; throws fx::Error for anything else.
Op op_from_name(std::string_view name);

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Op op() const { return op_; }
  const std::string& name() const { return b_->name; }
  // Renames the node (torch.fx's `node.name = name`). Throws fx::GraphError
  // if `name` is not a Python identifier, is a keyword, or is taken in this
  // graph (unlike create_node, which makes a given name unique, a rename is
  // exact). A builtin's name is kept in the graph and renamed in the code
  // (`sum` is `sum_1` there), as torch.fx does.
  void set_name(std::string_view name);
  Target target() const { return b_->target; }
  // Retargets the node (FX's `node.target = F.gelu`). The name stays: torch.fx
  // does not rename a node whose target changes.
  void set_target(Target target);
  Graph& graph() const { return *b_->graph; }
  bool erased() const { return erased_; }
  // Dense and unique in the node's graph, in creation order, never reused:
  // an analysis keeps its per-node state in an array of
  // graph().index_bound() entries indexed by it, not in the nodes, so any
  // number of threads can analyse one const graph at once.
  uint32_t index() const { return index_; }

  const Args& args() const { return b_->args; }
  const Kwargs& kwargs() const { return b_->kwargs; }
  // The keyword argument `key`, or nullptr.
  const Argument* kwarg(std::string_view key) const;

  // Replace the arguments; users of old and new inputs are updated.
  // Throws fx::GraphError if an argument is a node of another graph, an
  // erased node, this node itself, or a node defined after this one.
  void set_args(Args args);
  void set_kwargs(Kwargs kwargs);
  void update_arg(size_t index, Argument arg);
  void update_kwarg(std::string_view key, Argument arg);

  // The type annotation, as Python spells it (`torch.Tensor`, `int`).
  const std::optional<std::string>& type() const { return b_->type; }
  void set_type(std::optional<std::string> type) { b_->type = std::move(type); }

  Meta& meta() { return b_->meta; }
  const Meta& meta() const { return b_->meta; }
  // meta["stack_trace"], where the tracer recorded one.
  std::optional<std::string> stack_trace() const;
  void set_stack_trace(std::string trace) { b_->meta.set("stack_trace", std::move(trace)); }

  // The users of this node, in the order they started using it.
  class UserRange;
  UserRange users() const;
  size_t num_users() const { return b_->num_users; }
  // The distinct nodes in args then kwargs, in order of first appearance.
  std::vector<Node*> all_input_nodes() const;

  // Neighbours in the graph's node list; nullptr at either end.
  Node* next() const;
  Node* prev() const;

  // Move `x` (a node of the same graph) to just before / just after this node.
  // Throws fx::GraphError if the move would put a use before its definition
  // or a node after the output.
  void prepend(Node* x);
  void append(Node* x);

  // Rewrites every use of this node to use `replace_with`, in the users for
  // which `filter` returns true (all when no filter is given). Returns the
  // users that were changed. With propagate_meta, this node's meta entries
  // are copied to `replace_with` where it has none.
  std::vector<Node*> replace_all_uses_with(Node* replace_with,
                                           const std::function<bool(Node*)>& filter = nullptr,
                                           bool propagate_meta = false);
  // Rewrites the uses of `old_input` in this node's args/kwargs to `new_input`.
  void replace_input_with(Node* old_input, Node* new_input);

  // Why this node must not be removed, merged or folded (fx/impurity.h), or
  // Impurity::none. A call_module node asks the graph's owning module.
  Impurity impurity() const;
  bool is_impure() const { return impurity() != Impurity::none; }

  // This node as one line of the graph printout, e.g.
  // `%add : [num_users=1] = call_function[target=operator.add](args = (%x, %y), kwargs = {})`.
  std::string format_node() const;

  // True when this node comes before `other` in its graph (O(1)).
  bool is_before(const Node* other) const { return order_ < other->order_; }

 private:
  friend class Graph;
  // Only a Graph makes nodes (Graph::create_node and friends).
  Node() = default;
  struct Use {
    Node* def;   // the input node
    Node* user;  // the node that reads it (this)
    Use* prev;   // neighbours in def's user list
    Use* next;
  };
  // A node's input Uses: up to two inline (most nodes have one or two
  // inputs, and a heap block per node was a tenth of tracing), more on the
  // heap. Always contiguous, so that lint can tell a Use is in it.
  class InputUses {
   public:
    InputUses() = default;
    InputUses(const InputUses&) = delete;
    InputUses& operator=(const InputUses&) = delete;
    Use* data() { return size_ <= kInline ? inline_ : heap_.data(); }
    const Use* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
    Use* begin() { return data(); }
    Use* end() { return data() + size_; }
    const Use* begin() const { return data(); }
    const Use* end() const { return data() + size_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void push_back(const Use& u) {
      if (size_ < kInline) {
        inline_[size_++] = u;
        return;
      }
      if (size_ == kInline) heap_.assign(inline_, inline_ + kInline);
      heap_.push_back(u);
      ++size_;
    }
    void clear() {
      heap_.clear();
      size_ = 0;
    }

   private:
    static constexpr size_t kInline = 2;
    Use inline_[kInline];
    std::vector<Use> heap_;
    size_t size_ = 0;
  };

  void set_inputs(Args args, Kwargs kwargs);
  void unlink_uses();
  void link_uses();
  void check_settable() const;  // throws for an erased node
  void check_input(Node* n) const;
  void check_move(Node* x, Node* new_prev, Node* new_next) const;

  // What a walk over the graph reads (the list links, the order key, the
  // opcode, erased) is kept in the Node itself, 40 bytes: a graph's nodes lie
  // in arrays, so a walk streams through memory instead of striding over
  // everything else a node holds. The rest is the node's Body, in a parallel
  // array of the same block (Graph::allocate_node).
  struct Body {
    Graph* graph = nullptr;
    // Scratch for link_uses' de-duplication: an edit, never concurrent with
    // a reader. Analyses of a const graph keep their marks in arrays of their
    // own, indexed by Node::index_, so that any number of threads can read
    // one graph at once.
    uint64_t mark = 0;
    std::string name;
    Target target;
    Args args;
    Kwargs kwargs;
    std::optional<std::string> type;
    InputUses inputs;  // one Use per distinct input node
    Use* users_head = nullptr;
    Use* users_tail = nullptr;
    size_t num_users = 0;
    Meta meta;
    Node* bucket_next = nullptr;  // next node with the same (op, target)
    Node* bucket_prev = nullptr;
  };

  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  Body* b_ = nullptr;
  uint64_t order_ = 0;  // strictly increasing along the list
  Op op_ = Op::placeholder;
  bool erased_ = false;
  bool is_root_ = false;
  uint32_t index_ = 0;  // index()
};

class Node::UserRange {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node*;
    using difference_type = std::ptrdiff_t;
    using pointer = Node* const*;
    using reference = Node*;
    iterator() = default;
    explicit iterator(const Use* u) : u_(u) {}
    Node* operator*() const { return u_->user; }
    iterator& operator++() {
      u_ = u_->next;
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const { return u_ == o.u_; }

   private:
    const Use* u_ = nullptr;
  };
  explicit UserRange(const Use* head, size_t n) : head_(head), n_(n) {}
  iterator begin() const { return iterator(head_); }
  iterator end() const { return iterator(nullptr); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool contains(const Node* n) const;
  std::vector<Node*> to_vector() const {  // one walk of the list, not two
    std::vector<Node*> out;
    out.reserve(n_);
    for (Node* n : *this) out.push_back(n);
    return out;
  }

 private:
  const Use* head_;
  size_t n_;
};

inline Node::UserRange Node::users() const { return UserRange(b_->users_head, b_->num_users); }

// `node`'s args and kwargs with every node n in them replaced by fn(n)
// (map_arg over both): what a pass that copies or rewires a node builds.
std::pair<Args, Kwargs> map_args(const Node& node, const std::function<Argument(Node*)>& fn);

}  // namespace fx
