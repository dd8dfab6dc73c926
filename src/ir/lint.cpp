// Graph::lint: every invariant of the IR, checked in one linear pass.
#include <fx/error.h>
#include <fx/graph.h>

#include <string>
#include <vector>

#include "index_set.h"
#include "repr.h"
#include "visit.h"

namespace fx {

namespace {
using detail::quoted;

[[noreturn]] void fail(const Node* n, const std::string& what) {
  throw LintError("lint: node " + quoted(n) + ": " + what);
}

bool well_formed_path(std::string_view path) {
  if (path.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    if (dot == start) return false;  // empty atom
    if (dot == std::string_view::npos) return start < path.size();
    start = dot + 1;
  }
}
}  // namespace

void Graph::lint() const {
  // The names seen, by their node's index in `named`.
  std::vector<const std::string*> named;
  named.reserve(size_);
  detail::IndexSet names;
  names.reserve(size_);
  auto name_of = [&](uint32_t i) { return std::string_view(*named[i]); };
  // A mark per node, by index: `seen` once defined; while its user is
  // checked, that user's own stamp (so each input counts once).
  std::vector<uint64_t> mark(index_bound());
  constexpr uint64_t seen = 1;
  uint64_t stamp = seen;
  size_t count = 0;
  const Node* prev = root_;
  for (Node* n = root_->next_; n != root_; prev = n, n = n->next_) {
    ++count;
    if (n->prev_ != prev) fail(n, "the node list is broken (prev link)");
    if (n->b_->graph != this) fail(n, "does not belong to this graph");
    if (n->erased_) fail(n, "is erased but still in the node list");
    if (prev != root_ && !(prev->order_ < n->order_)) fail(n, "order keys are not increasing");
    if (!names.insert(n->b_->name, static_cast<uint32_t>(named.size()), name_of).second)
      fail(n, "its name is used by another node");
    named.push_back(&n->b_->name);
    if (output_ && n != output_ && output_->order_ < n->order_) fail(n, "comes after the output node");
    if (n->op_ == Op::output && n != output_) fail(n, "is a second output node");

    // Inputs: defined earlier in this graph, and each one lists n as a user.
    const uint64_t mine = ++stamp;
    size_t distinct = 0;
    auto check_arg = [&](Node* in) {
      if (in->b_->graph != this)
        fail(n, "argument " + quoted(in) +
                    " belongs to another graph; copy nodes with node_copy's arg_transform");
      if (in->erased_) fail(n, "argument " + quoted(in) + " is an erased node");
      uint64_t& m = mark[in->index_];
      if (m != seen && m != mine)
        fail(n, "argument " + quoted(in) +
                    " is used before it is defined; the graph must be topologically ordered");
      if (m == seen) {
        m = mine;
        ++distinct;
      }
    };
    detail::visit_nodes(n->b_->args, n->b_->kwargs, check_arg);
    if (distinct != n->b_->inputs.size()) fail(n, "its input list disagrees with its args/kwargs");
    for (const auto& u : n->b_->inputs) {
      if (u.user != n || u.def->b_->graph != this || mark[u.def->index_] != mine)
        fail(n, "its input list disagrees with its args/kwargs");
      mark[u.def->index_] = seen;
    }
    // Users: each user's input list holds the use record that points here.
    size_t users = 0;
    for (const Node::Use* u = n->b_->users_head; u; u = u->next, ++users) {
      const auto& in = u->user->b_->inputs;
      if (u->def != n || in.empty() || u < in.data() || u >= in.data() + in.size())
        fail(n, "its user list disagrees with the arguments of " + quoted(u->user));
    }
    if (users != n->b_->num_users) fail(n, "its user count is wrong");

    // Targets.
    const std::string& t = n->b_->target.str();
    switch (n->op_) {
      case Op::get_attr:
      case Op::call_module:
        if (!well_formed_path(t)) fail(n, "target '" + t + "' is not a dotted attribute path");
        if (owning_module_) {
          bool ok = n->op_ == Op::get_attr ? owning_module_->has_attribute(t)
                                           : owning_module_->has_target_module(n->b_->target);
          if (!ok)
            fail(n, std::string("target '") + t + "' does not exist in the owning module" +
                        (n->op_ == Op::call_module ? " (no such submodule)" : ""));
        }
        break;
      case Op::call_method:
        if (!well_formed_path(t)) fail(n, "method name '" + t + "' is not well formed");
        if (n->b_->args.empty()) fail(n, "a call_method node needs its self value as args[0]");
        break;
      case Op::placeholder:
        if (!n->b_->kwargs.empty() || n->b_->args.size() > 1)
          fail(n, "a placeholder takes at most one default value");
        break;
      case Op::output:
        if (n->b_->args.size() != 1)
          fail(n, "the output node takes exactly one argument, the returned value");
        break;
      case Op::call_function:
        break;
    }
    mark[n->index_] = seen;
  }
  if (count != size_)
    throw LintError("lint: the graph counts " + std::to_string(size_) + " nodes but lists " +
                    std::to_string(count));
  if (!output_) throw LintError("lint: the graph has no output node; add one with Graph::output");
  if (output_->next_ != root_) fail(output_, "the output node is not the last node");
}

}  // namespace fx
