// Graph::python_code: the Python `forward` torch.fx generates for a graph,
// reproduced statement for statement (torch/fx/graph.py, CodeGen._gen_python_code).
#include <fx/error.h>
#include <fx/graph.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "namespace.h"
#include "python_names.h"
#include "repr.h"
#include "target_entry.h"
#include "visit.h"

namespace fx {

namespace {

using detail::quoted;
// Literals appended as string_views: std::string's append(const char*)
// measures its text with strlen at each call.
using namespace std::string_view_literals;

// The comma-separated arguments of a generic type, split at top level.
// The parts of `inner` separated by `sep` outside brackets, trimmed.
std::vector<std::string> split_type_args(std::string_view inner, char sep = ',') {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i < inner.size() && inner[i] == '[') ++depth;
    if (i < inner.size() && inner[i] == ']') --depth;
    if (i == inner.size() || (inner[i] == sep && depth == 0)) {
      std::string_view part = inner.substr(start, i - start);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      out.emplace_back(part);
      start = i + 1;
    }
  }
  return out;
}

// Names every node and global of one generated function in one namespace,
// as FX does, so that a node named like a global is renamed in the code.
//
// The graph's node names are already unique and in normal form, so a node
// keeps its own name unless a global or a renamed node took it first. Such a
// node is only marked as named (in `named_`, by node index), not
// stored: the table holds the globals and the renamed nodes, and asks the
// graph (`taken_elsewhere`) whether a name is that of a node named already.
// The names are FX's, without a table of every node.
class CodeNames final : public detail::NodeNamer {
 public:
  CodeNames(const Graph& graph, const std::vector<Node*>& order, size_t index_bound,
            const detail::Namespace& graph_names, bool names_normal)
      : graph_(graph),
        order_(order),
        named_(index_bound),
        graph_names_(graph_names),
        names_normal_(names_normal) {
    ns_.add_custom_builtins();
    ns_.set_taken_elsewhere([this](std::string_view name) { return kept_by_a_node(name); });
    for (const char* b : {"inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree"})
      globals_.emplace_back(b, b);
  }
  void append_name(std::string& out, const Node* n) const override {
    // A node of another graph, or erased, is named through the table.
    if (&n->graph() != &graph_ || n->erased()) {
      out += ns_.create_name(n->name(), n);
      return;
    }
    auto named = named_[n->index()];
    if (named) {  // named already: its own name, unless the table renamed it
      if (renamed_ == 0 || !ns_.has_object(n))
        out += n->name();
      else
        out += ns_.create_name(n->name(), n);
      return;
    }
    if (names_normal_ ? ns_.keeps_plain(n->name()) : ns_.keeps(n->name(), n)) {
      named = true;
      out += n->name();
      return;
    }
    out += ns_.create_name(n->name(), n);
    ++renamed_;
    named = true;  // after: while it is named, its own name is not taken by it
  }
  std::string name_of(const Node* n) const {
    std::string out;
    append_name(out, n);
    return out;
  }

  // FX's add_global: torch's own objects keep their qualified name, anything
  // else gets a sanitized unique name.
  // A reference, valid until the next call: most nodes of an ATen graph
  // call torch's own functions, whose names are not copied per node.
  const std::string& global(const detail::TargetEntry* e) {
    if (e->from_torch && e->name != "torch.device") return e->code_name;
    last_global_ = record(ns_.create_name(e->code_name, e), e->name);
    return last_global_;
  }
  std::string global_name(std::string_view qualified) {
    if (detail::is_python_builtin(qualified))
      return record(ns_.create_name(qualified, detail::Namespace::builtin_identity(qualified)), qualified);
    if (const void* custom = detail::Namespace::custom_builtin_identity(qualified))
      return ns_.create_name(qualified, custom);
    return global(Target(qualified).entry());
  }

  // FX's type_repr, for an annotation spelled the way _type_repr prints it
  // (`torch.Tensor`, `typing.List[int]`, `typing.Optional[torch.Tensor]`).
  std::string type_repr(std::string_view t) {
    if (t == "()") return "()";
    // A PEP 604 union (`torch.Tensor | None`) is written through typing.Union,
    // its None as NoneType: typing.get_args gives the NoneType class.
    if (std::vector<std::string> members = split_type_args(t, '|'); members.size() > 1) {
      std::string out = global_name("typing.Union") + '[';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i) out += ',';
        out += type_repr(members[i] == "None" ? "NoneType" : members[i]);
      }
      return out + "]";
    }
    size_t open = t.find('[');
    if (open == std::string_view::npos || t.back() != ']') return global_name(t);
    std::string origin(t.substr(0, open));
    std::vector<std::string> args = split_type_args(t.substr(open + 1, t.size() - open - 2));
    // What Python's typing objects report as __origin__ / __args__.
    if (origin == "typing.Optional" || origin == "Optional") {
      origin = "typing.Union";
      args.push_back("NoneType");
    }
    // `list[int]` keeps its builtin origin in FX 2.x; only typing's aliases
    // (`typing.List[int]`) are spelled through typing.
    std::string out = global_name(origin);
    if (args.size() == 1 && args[0] == "()") return out;  // Tuple[()] has no __args__
    out += '[';
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) out += ',';
      out += type_repr(args[i]);
    }
    return out + "]";
  }

  std::vector<std::pair<std::string, std::string>> take_globals() { return std::move(globals_); }

 private:
  // Whether `name` is the name of a node of the graph that kept it here.
  bool kept_by_a_node(std::string_view name) const {
    if (!graph_names_.contains(name)) return false;  // no node was ever called that
    if (by_name_.empty())  // rarely needed: built once, when a global or a renamed node asks
      for (const Node* n : order_) by_name_.emplace(n->name(), n);
    auto it = by_name_.find(name);
    return it != by_name_.end() && named_[it->second->index()] && !ns_.has_object(it->second);
  }

  std::string record(std::string name, std::string_view what) {
    for (const auto& g : globals_)
      if (g.first == name) return name;
    globals_.emplace_back(name, std::string(what));
    return name;
  }

  const Graph& graph_;
  const std::vector<Node*>& order_;
  mutable std::vector<bool> named_;  // by node index
  const detail::Namespace& graph_names_;
  const bool names_normal_;     // every node name is in normal form (Graph::names_normal_)
  mutable size_t renamed_ = 0;  // nodes of this graph the table renamed
  mutable std::unordered_map<std::string_view, const Node*> by_name_;
  mutable detail::Namespace ns_;
  std::vector<std::pair<std::string, std::string>> globals_;
  std::string last_global_;  // global()'s result for a function not torch's
};

// out += each part, without the temporaries of a chain of operator+.
void cat(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) out += p;
}

// torch.fx.graph._format_target: `self.layer1.0` -> `getattr(self.layer1, "0")`.
// out += the attribute path `target` of what append_base() appends. An atom
// that is not an identifier wraps all before it in a getattr(...), so the
// openings come first.
template <class AppendBase>
void append_format_target(std::string& out, const AppendBase& append_base, std::string_view target) {
  auto for_each_atom = [&](auto&& f) {
    for (size_t start = 0;;) {
      const size_t dot = target.find('.', start);
      f(target.substr(start, dot == std::string_view::npos ? dot : dot - start));
      if (dot == std::string_view::npos) return;
      start = dot + 1;
    }
  };
  for_each_atom([&](std::string_view atom) {
    if (!detail::is_identifier(atom)) out += "getattr(";
  });
  append_base();
  for_each_atom([&](std::string_view atom) {
    if (detail::is_identifier(atom))
      cat(out, {".", atom});
    else
      cat(out, {", \"", atom, "\")"});
  });
}

// out += fmt.format(*(repr(a) for a in args)) with positional `{}` fields.
// Python reprs every argument, the extra ones too: they are named all the same.
void append_fields(std::string& out, const Node* n, const char* fmt, const Args& args,
                   const detail::NodeNamer& names) {
  size_t next = 0;
  for (const char* p = fmt; *p;) {
    if (p[0] == '{' && p[1] == '}') {
      if (next >= args.size())
        throw Error("python_code: node " + quoted(n) + " calls " + n->target().str() + " with " +
                    std::to_string(args.size()) + " argument(s), too few for `" + fmt + "`");
      detail::append_repr(out, args[next++], names);
      p += 2;
      continue;
    }
    const char* text = p++;  // up to the next field, in one append
    while (*p && !(p[0] == '{' && p[1] == '}')) ++p;
    out.append(text, static_cast<size_t>(p - text));
  }
  for (; next < args.size(); ++next) detail::repr(args[next], names);
}

}  // namespace

PythonCode Graph::python_code(std::string_view root_module) const {
  const std::vector<Node*> order = nodes().to_vector();
  return python_code(root_module, order, last_uses(order));
}

PythonCode Graph::python_code(std::string_view root_module, const std::vector<Node*>& order,
                              const LastUses& dies_at) const {  // dies_at[i]: freed after the i-th node
  if (dies_at.size() != order.size())
    throw Error("python_code: last_uses were computed for " + std::to_string(dies_at.size()) +
                " nodes, but the order given has " + std::to_string(order.size()) +
                "; pass last_uses(order) for the same order");
  PythonCode result;
  CodeNames names(*this, order, index_bound(), *names_, names_normal_);

  auto reprs = [&](const Argument& a) { return detail::repr(a, names); };
  // Every statement is appended to the body as FX's f-strings evaluate it,
  // left to right: the order in which nodes are named is FX's.
  std::string body;
  auto append_repr = [&](const Argument& a) { detail::append_repr(body, a, names); };
  auto append_args = [&](const Args& args, size_t skip, const Kwargs& kwargs) {
    const char* separator = "";
    for (size_t i = skip; i < args.size(); ++i) {
      body += separator;
      separator = ", ";
      append_repr(args[i]);
    }
    for (const auto& [k, v] : kwargs) {
      cat(body, {separator, k, " = "});
      separator = ", ";
      append_repr(v);
    }
  };
  // ` = ` after a node's name, with its annotation if it has one.
  auto append_assign = [&](const std::string& type) {
    if (!type.empty()) body += type;
    body += " = "sv;
  };
  auto append_root_target = [&](const std::string& target) {
    append_format_target(
        body, [&] { body += root_module; }, target);
  };

  std::vector<std::string> free_vars;
  std::vector<std::string> wrapped;
  std::string return_annotation;
  // Most statements, indented, are shorter: growing a large string by
  // doubling copies it and faults in fresh pages at every step.
  body.reserve(68 * order.size() + 256);
  // FX indents every line of the body by four spaces, the empty one after
  // its last newline too. Each statement is indented as it ends: the body
  // starts with a line's four spaces, and each newline gets the next
  // line's (a repr with a newline of its own too).
  body += "    "sv;
  size_t indented = body.size();
  auto indent = [&] {
    // std::string::find of a char is memchr (char_traits::find).
    for (size_t at = body.find('\n', indented); at != std::string::npos; at = body.find('\n', at)) {
      ++at;
      if (at == body.size())
        body += "    "sv;
      else
        body.insert(at, "    "sv);
      at += 4;
    }
    indented = body.size();
  };
  // Every way out of an iteration ends its statement: indent() runs in the step.
  for (size_t i = 0; i < order.size(); indent(), ++i) {
    const Node* n = order[i];
    std::string type;  // most nodes have no annotation
    if (n->b_->type) type = " : " + names.type_repr(*n->b_->type);
    const std::string& target = n->b_->target.str();
    switch (n->op_) {
      case Op::placeholder: {
        std::string def = n->b_->args.empty() ? "" : " = " + reprs(n->b_->args[0]);
        free_vars.push_back(target + type + def);
        std::string raw = target;
        std::erase(raw, '*');
        std::string name = names.name_of(n);
        if (raw != name) cat(body, {name, " = ", raw, "\n"});
        continue;  // placeholders free nothing
      }
      case Op::call_method:
        if (n->b_->args.empty())
          throw Error("python_code: call_method node " + quoted(n) + " has no self argument (args[0])");
        names.append_name(body, n);
        append_assign(type);
        append_format_target(
            body, [&] { append_repr(n->b_->args[0]); }, target);
        body += '(';
        append_args(n->b_->args, 1, n->b_->kwargs);
        body += ')';
        break;
      case Op::call_function: {
        const detail::TargetEntry* e = n->b_->target.entry();
        if (e->magic_format) {
          names.append_name(body, n);
          append_assign(type);
          append_fields(body, n, e->magic_format, n->b_->args, names);
          break;
        }
        if (e->inplace_format) {
          append_fields(body, n, e->inplace_format, n->b_->args, names);
          body += ";  "sv;
          names.append_name(body, n);
          append_assign(type);
          append_repr(n->b_->args.at(0));
          break;
        }
        const std::string& fn = names.global(e);  // FX adds the global before naming the node
        names.append_name(body, n);
        append_assign(type);
        if (fn == "getattr" && n->b_->args.size() == 2 && n->b_->args[1].is<std::string>() &&
            detail::is_identifier(n->b_->args[1].get<std::string>())) {
          append_format_target(
              body, [&] { append_repr(n->b_->args[0]); }, n->b_->args[1].get<std::string>());
          break;
        }
        body += fn;
        body += '(';
        append_args(n->b_->args, 0, n->b_->kwargs);
        body += ')';
        if (const bool* w = n->b_->meta.get<bool>("is_wrapped"); w && *w) {
          if (std::find(wrapped.begin(), wrapped.end(), fn) == wrapped.end()) wrapped.push_back(fn);
        }
        break;
      }
      case Op::call_module:
        names.append_name(body, n);
        append_assign(type);
        append_root_target(target);
        body += '(';
        append_args(n->b_->args, 0, n->b_->kwargs);
        body += ')';
        break;
      case Op::get_attr:
        names.append_name(body, n);
        append_assign(type);
        append_root_target(target);
        break;
      case Op::output:
        if (n->b_->type) return_annotation = " -> " + names.type_repr(*n->b_->type);
        if (n->b_->args.empty()) throw Error("python_code: the output node " + quoted(n) + " has no value");
        if (pytree_info_) {
          body += "return pytree.tree_unflatten("sv;
          append_repr(n->b_->args[0]);
          body += ", self._out_spec)"sv;
        } else {
          body += "return "sv;
          append_repr(n->b_->args[0]);
        }
        body += '\n';
        continue;
    }
    // A node nobody uses (kept for its side effect) is freed right after it, as in FX 2.x.
    const bool unused = n->num_users() == 0;
    if (dies_at[i].empty() && !unused) {
      body += '\n';
    } else {
      body += ";  "sv;
      for (Node* dead : dies_at[i]) {
        names.append_name(body, dead);
        body += " = "sv;
      }
      if (unused) {
        names.append_name(body, n);
        body += " = "sv;
      }
      body += "None\n"sv;
    }
  }
  // FX 2.x's body holds a counter comment per node: `pass` only for a graph with no nodes.
  if (order.empty()) {
    body += "pass\n"sv;
    indent();
  }

  std::string wrap_stmts;
  if (!wrapped.empty()) {
    std::string wrap = names.global(Target("torch.fx._symbolic_trace.wrap").entry());
    for (size_t i = 0; i < wrapped.size(); ++i)
      wrap_stmts += (i ? "\n" : "") + wrap + "(\"" + wrapped[i] + "\")";
  }
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out;
  };
  std::string prologue;
  if (pytree_info_) {
    // torch.fx's _PyTreeCodeGen.gen_fn_def: the original parameters, then
    // one statement flattening them into the placeholders.
    std::vector<std::string> function_args = pytree_info_->orig_args;
    if (!function_args.empty() && function_args[0] == "self") free_vars.insert(free_vars.begin(), "self");
    if (function_args.empty() || function_args[0] != "self")
      function_args.insert(function_args.begin(), "self");
    prologue = "def forward(" + join(function_args) + ")" + return_annotation + ":";
    if (!free_vars.empty())
      prologue += "\n    " + join(free_vars) + ", = fx_pytree.tree_flatten_spec([" +
                  join(pytree_info_->orig_args) + "], self._in_spec)";
  } else {
    if (free_vars.empty() || free_vars[0] != "self") free_vars.insert(free_vars.begin(), "self");
    prologue = "def forward(" + join(free_vars) + ")" + return_annotation + ":";
  }

  // The source: the header, then the body, in the body's own buffer (a
  // second copy of a large body costs fresh pages).
  std::string header;
  cat(header, {"\n", wrap_stmts, "\n\n", prologue, "\n"});
  body.insert(0, header);
  result.src = std::move(body);
  result.globals = names.take_globals();
  return result;
}

}  // namespace fx
