#include <fx/error.h>
#include <fx/graph.h>
#include <fx/node.h>

#include <algorithm>
#include <array>
#include <string>

#include "repr.h"
#include "target_entry.h"
#include "visit.h"

namespace fx {

namespace {

constexpr std::array<std::string_view, 6> kOpNames = {"placeholder", "get_attr",    "call_function",
                                                      "call_method", "call_module", "output"};

using detail::quoted;

}  // namespace

std::string_view op_name(Op op) { return kOpNames.at(static_cast<size_t>(op)); }

Op op_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  throw Error("unknown opcode '" + std::string(name) +
              "': expected placeholder, get_attr, call_function, call_method, call_module or output");
}

const Argument* Node::kwarg(std::string_view key) const {
  for (const auto& [k, v] : b_->kwargs)
    if (k == key) return &v;
  return nullptr;
}

std::optional<std::string> Node::stack_trace() const {
  if (const auto* s = b_->meta.get<std::string>("stack_trace")) return *s;
  return std::nullopt;
}

bool Node::UserRange::contains(const Node* n) const {
  for (const Use* u = head_; u; u = u->next)
    if (u->user == n) return true;
  return false;
}

Node* Node::next() const { return next_->is_root_ ? nullptr : next_; }
Node* Node::prev() const { return prev_->is_root_ ? nullptr : prev_; }

std::vector<Node*> Node::all_input_nodes() const {
  std::vector<Node*> out;
  out.reserve(b_->inputs.size());
  for (const auto& u : b_->inputs) out.push_back(u.def);
  return out;
}

void Node::check_input(Node* n) const {
  if (n->b_->graph != b_->graph)
    throw GraphError("node " + quoted(n) + " belongs to another graph but was used as an argument of " +
                     quoted(this) +
                     "; copy it into this graph first (Graph::node_copy or graph_copy with a value map)");
  if (n->erased_)
    throw GraphError("node " + quoted(n) + " was erased but is used as an argument of " + quoted(this));
  if (n == this)
    throw GraphError("node " + quoted(this) + " cannot use itself as an argument: that is a cycle");
  if (!n->is_before(this))
    throw GraphError("node " + quoted(n) + " is used by " + quoted(this) +
                     " but comes after it: a use before the definition (or a cycle). Move " + quoted(n) +
                     " before " + quoted(this) + " first (Node::prepend/append)");
}

void Node::unlink_uses() {
  for (auto& u : b_->inputs) {
    Node* def = u.def;
    (u.prev ? u.prev->next : def->b_->users_head) = u.next;
    (u.next ? u.next->prev : def->b_->users_tail) = u.prev;
    --def->b_->num_users;
  }
  b_->inputs.clear();
}

void Node::link_uses() {
  uint64_t epoch = b_->graph->next_mark();
  detail::visit_nodes(b_->args, b_->kwargs, [&](Node* n) {
    if (n->b_->mark != epoch) {
      n->b_->mark = epoch;
      b_->inputs.push_back(Use{n, this, nullptr, nullptr});
    }
  });
  // Link only once the vector has stopped growing: the lists hold pointers into it.
  for (auto& u : b_->inputs) {
    Node* def = u.def;
    u.prev = def->b_->users_tail;
    (def->b_->users_tail ? def->b_->users_tail->next : def->b_->users_head) = &u;
    def->b_->users_tail = &u;
    ++def->b_->num_users;
  }
}

void Node::check_settable() const {
  if (erased_) throw GraphError("node " + quoted(this) + " was erased; its arguments cannot be set");
}

void Node::set_inputs(Args args, Kwargs kwargs) {
  check_settable();
  detail::visit_nodes(args, kwargs, [&](Node* n) { check_input(n); });
  unlink_uses();
  b_->args = std::move(args);
  b_->kwargs = std::move(kwargs);
  link_uses();
}

void Node::set_args(Args args) { set_inputs(std::move(args), b_->kwargs); }
void Node::set_kwargs(Kwargs kwargs) { set_inputs(b_->args, std::move(kwargs)); }

void Node::update_arg(size_t index, Argument arg) {
  if (index >= b_->args.size())
    throw GraphError("update_arg: node " + quoted(this) + " has " + std::to_string(b_->args.size()) +
                     " positional arguments, index " + std::to_string(index) + " is out of range");
  Args args = b_->args;
  args[index] = std::move(arg);
  set_args(std::move(args));
}

void Node::update_kwarg(std::string_view key, Argument arg) {
  Kwargs kwargs = b_->kwargs;
  auto it = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != kwargs.end())
    it->second = std::move(arg);
  else
    kwargs.emplace_back(std::string(key), std::move(arg));
  set_kwargs(std::move(kwargs));
}

void Node::check_move(Node* x, Node* new_prev, Node* new_next) const {
  if (x->b_->graph != b_->graph)
    throw GraphError("cannot move node " + quoted(x) + " next to " + quoted(this) +
                     ": they belong to different graphs");
  if (x->erased_ || erased_)
    throw GraphError("cannot move node " + quoted(x) + " next to " + quoted(this) + ": a node is erased");
  Node* out = b_->graph->output_;
  if (x == out && !new_next->is_root_)
    throw GraphError("cannot move the output node " + quoted(x) + " before " + quoted(new_next) +
                     ": the output must stay the last node");
  if (out && x != out && new_prev == out)
    throw GraphError("cannot move node " + quoted(x) + " after the output node " + quoted(out));
  for (const auto& u : x->b_->inputs) {
    if (new_next->is_root_ || u.def->is_before(new_next)) continue;
    throw GraphError("cannot move node " + quoted(x) + " before its input " + quoted(u.def));
  }
  for (const Use* u = x->b_->users_head; u; u = u->next) {
    if (!new_next->is_root_ && (u->user == new_next || new_next->is_before(u->user))) continue;
    throw GraphError("cannot move node " + quoted(x) + " after its user " + quoted(u->user));
  }
}

void Node::prepend(Node* x) {
  if (x == this || x == prev_) return;
  check_move(x, prev_, this);
  b_->graph->unlink(x);
  b_->graph->link_between(x, prev_, this);
}

void Node::append(Node* x) {
  if (x == this || x == next_) return;
  check_move(x, this, next_);
  b_->graph->unlink(x);
  b_->graph->link_between(x, this, next_);
}

std::vector<Node*> Node::replace_all_uses_with(Node* replace_with, const std::function<bool(Node*)>& filter,
                                               bool propagate_meta) {
  if (replace_with == nullptr)
    throw GraphError("replace_all_uses_with: the replacement of " + quoted(this) + " is null");
  std::vector<Node*> chosen;
  for (Node* user : users())
    if (!filter || filter(user)) chosen.push_back(user);
  if (replace_with != this)
    for (Node* user : chosen) user->check_input(replace_with);  // all or nothing
  if (propagate_meta)
    for (const auto& [k, v] : b_->meta)
      if (!replace_with->b_->meta.contains(k)) replace_with->b_->meta.set(k, v);
  if (replace_with == this) return chosen;
  for (Node* user : chosen) user->replace_input_with(this, replace_with);
  return chosen;
}

// As set_inputs with old_input swapped for new_input, but in place: a direct
// argument is swapped, and only an argument holding old_input inside it (a
// list, a dict) is rebuilt (a pass like CSE does this once per merged node).
// The users lists are relinked as set_inputs relinks them, as FX does even
// when nothing changed.
void Node::replace_input_with(Node* old_input, Node* new_input) {
  check_settable();
  bool direct = false;
  bool nested = false;
  auto holds_old = [&](const Argument& a) {
    bool held = false;
    detail::visit_nodes(a, [&](Node* n) { held = held || n == old_input; });
    return held;
  };
  auto find = [&](const Argument& a) {
    if (Node* n = a.node())
      direct = direct || n == old_input;
    else
      nested = nested || holds_old(a);
  };
  for (const auto& a : b_->args) find(a);
  for (const auto& kv : b_->kwargs) find(kv.second);
  if (direct || nested) check_input(new_input);
  // The rebuilt holders are made before anything changes: all or nothing.
  std::vector<std::pair<Argument*, Argument>> rebuilt;
  auto rebuild = [&](Argument& a) {
    if (!a.node() && holds_old(a))
      rebuilt.emplace_back(&a,
                           map_arg(a, [&](Node* n) -> Argument { return n == old_input ? new_input : n; }));
  };
  if (nested) {
    for (auto& a : b_->args) rebuild(a);
    for (auto& kv : b_->kwargs) rebuild(kv.second);
  }
  unlink_uses();
  auto swap = [&](Argument& a) {
    if (a.node() == old_input) a = Argument(new_input);
  };
  if (direct) {
    for (auto& a : b_->args) swap(a);
    for (auto& kv : b_->kwargs) swap(kv.second);
  }
  for (auto& [slot, value] : rebuilt) *slot = std::move(value);
  link_uses();
}

std::string Node::format_node() const {
  std::string out;
  auto head = [&] {
    out += '%';
    out += b_->name;
    out += " : ";
    if (b_->type && !b_->type->empty()) {
      out += *b_->type;
      out += ' ';
    }
    out += "[num_users=";
    out += std::to_string(b_->num_users);
    out += "] = ";
    out += op_name(op_);
    out += "[target=";
    out += b_->target.str();
    out += ']';
  };
  switch (op_) {
    case Op::placeholder:
      head();
      if (!b_->args.empty()) {
        out += "(default=";
        out += detail::str(b_->args[0], detail::plain_names());
        out += ')';
      }
      return out;
    case Op::get_attr:
      head();
      return out;
    case Op::output:
      out = "return ";
      out += b_->args.empty() ? "None" : detail::str(b_->args[0], detail::plain_names());
      return out;
    default:
      head();
      out += "(args = ";
      detail::append_format_args(out, b_->args);
      out += ", kwargs = ";
      detail::append_format_kwargs(out, b_->kwargs);
      out += ')';
      return out;
  }
}

std::pair<Args, Kwargs> map_args(const Node& node, const std::function<Argument(Node*)>& fn) {
  std::pair<Args, Kwargs> out;
  out.first.reserve(node.args().size());
  for (const Argument& a : node.args()) out.first.push_back(map_arg(a, fn));
  out.second.reserve(node.kwargs().size());
  for (const auto& [k, v] : node.kwargs()) out.second.emplace_back(k, map_arg(v, fn));
  return out;
}

}  // namespace fx
