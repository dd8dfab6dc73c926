// Graph::python_code: the Python `forward` torch.fx generates for a graph,
// reproduced statement for statement (torch/fx/graph.py, CodeGen._gen_python_code).
#include <fx/error.h>
#include <fx/graph.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "../ir/namespace.h"
#include "../ir/python_names.h"
#include "../ir/repr.h"
#include "../ir/target_entry.h"
#include "../ir/visit.h"

namespace fx {

namespace {

using detail::quoted;

// The comma-separated arguments of a generic type, split at top level.
std::vector<std::string> split_type_args(std::string_view inner) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i < inner.size() && inner[i] == '[') ++depth;
    if (i < inner.size() && inner[i] == ']') --depth;
    if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
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
// node is only marked as named (its scratch mark set to `epoch`), not
// stored: the table holds the globals and the renamed nodes, and asks the
// graph (`taken_elsewhere`) whether a name is that of a node named already.
// The names are FX's, without a table of every node.
class CodeNames final : public detail::NodeNamer {
 public:
  using MarkOf = uint64_t& (*)(const Node*);
  CodeNames(const Graph& graph, const std::vector<Node*>& order, uint64_t epoch, MarkOf mark_of,
            const detail::Namespace& graph_names)
      : graph_(graph), order_(order), epoch_(epoch), mark_of_(mark_of), graph_names_(graph_names) {
    ns_.add_custom_builtins();
    ns_.set_taken_elsewhere([this](std::string_view name) { return kept_by_a_node(name); });
    for (const char* b : {"inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree"})
      globals_.emplace_back(b, b);
  }
  std::string name_of(const Node* n) const override {
    // A node of another graph, or erased, is named through the table.
    if (&n->graph() != &graph_ || n->erased()) return ns_.create_name(n->name(), n);
    uint64_t& mark = mark_of_(n);
    if (mark == epoch_) return named(n);
    if (ns_.keeps(n->name(), n)) {
      mark = epoch_;
      return n->name();
    }
    std::string name = ns_.create_name(n->name(), n);
    mark = epoch_;  // after: while it is named, its own name is not taken by it
    return name;
  }

  // FX's add_global: torch's own objects keep their qualified name, anything
  // else gets a sanitized unique name.
  std::string global(const detail::TargetEntry* e) {
    if (e->from_torch && e->name != "torch.device") return e->code_name;
    return record(ns_.create_name(e->code_name, e), e->name);
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
    size_t open = t.find('[');
    if (open == std::string_view::npos || t.back() != ']') return global_name(t);
    std::string origin(t.substr(0, open));
    std::vector<std::string> args = split_type_args(t.substr(open + 1, t.size() - open - 2));
    // What Python's typing objects report as __origin__ / __args__.
    if (origin == "typing.Optional" || origin == "Optional") {
      origin = "typing.Union";
      args.push_back("NoneType");
    }
    static const std::pair<std::string_view, std::string_view> kOrigins[] = {
        {"list", "typing.List"},
        {"dict", "typing.Dict"},
        {"set", "typing.Set"},
        {"frozenset", "typing.FrozenSet"},
        {"tuple", "typing.Tuple"}};
    for (const auto& [builtin, typing_name] : kOrigins)
      if (origin == builtin) origin = typing_name;
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
  // The name of a node named already: its own, unless the table renamed it.
  std::string named(const Node* n) const {
    return ns_.has_object(n) ? ns_.create_name(n->name(), n) : n->name();
  }

  // Whether `name` is the name of a node of the graph that kept it here.
  bool kept_by_a_node(std::string_view name) const {
    if (!graph_names_.contains(name)) return false;  // no node was ever called that
    if (by_name_.empty())  // rarely needed: built once, when a global or a renamed node asks
      for (const Node* n : order_) by_name_.emplace(n->name(), n);
    auto it = by_name_.find(name);
    return it != by_name_.end() && mark_of_(it->second) == epoch_ && !ns_.has_object(it->second);
  }

  std::string record(std::string name, std::string_view what) {
    for (const auto& g : globals_)
      if (g.first == name) return name;
    globals_.emplace_back(name, std::string(what));
    return name;
  }

  const Graph& graph_;
  const std::vector<Node*>& order_;
  uint64_t epoch_;
  MarkOf mark_of_;
  const detail::Namespace& graph_names_;
  mutable std::unordered_map<std::string_view, const Node*> by_name_;
  mutable detail::Namespace ns_;
  std::vector<std::pair<std::string, std::string>> globals_;
};

// out += each part, without the temporaries of a chain of operator+.
void cat(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) out += p;
}

// torch.fx.graph._format_target: `self.layer1.0` -> `getattr(self.layer1, "0")`.
std::string format_target(std::string base, std::string_view target) {
  size_t start = 0;
  while (true) {
    size_t dot = target.find('.', start);
    std::string_view atom = target.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (detail::is_identifier(atom)) {
      base += '.';
      base += atom;
    } else {
      base = "getattr(" + base + ", \"" + std::string(atom) + "\")";
    }
    if (dot == std::string_view::npos) return base;
    start = dot + 1;
  }
}

// out += str.format with positional `{}` fields; extra values are ignored, as in Python.
void append_fields(std::string& out, const Node* n, const char* fmt, const std::vector<std::string>& values) {
  size_t next = 0;
  for (const char* p = fmt; *p; ++p) {
    if (p[0] == '{' && p[1] == '}') {
      if (next >= values.size())
        throw Error("python_code: node " + quoted(n) + " calls " + n->target().str() + " with " +
                    std::to_string(values.size()) + " argument(s), too few for `" + fmt + "`");
      out += values[next++];
      ++p;
    } else {
      out += *p;
    }
  }
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
  CodeNames names(
      *this, order, next_mark(), [](const Node* n) -> uint64_t& { return n->mark_; }, *names_);

  auto reprs = [&](const Argument& a) { return detail::repr(a, names); };
  auto format_args = [&](const Args& args, size_t skip, const Kwargs& kwargs) {
    std::string out;
    for (size_t i = skip; i < args.size(); ++i) {
      if (!out.empty()) out += ", ";
      out += reprs(args[i]);
    }
    for (const auto& [k, v] : kwargs) {
      if (!out.empty()) out += ", ";
      out += k + " = " + reprs(v);
    }
    return out;
  };

  std::vector<std::string> free_vars;
  std::vector<std::string> wrapped;
  std::string return_annotation;
  std::vector<std::string> values;  // the arguments' text, for a `{} + {}` format
  std::string body;
  // Most statements, indented, are shorter: growing a large string by
  // doubling copies it and faults in fresh pages at every step.
  body.reserve(68 * order.size() + 256);
  for (size_t i = 0; i < order.size(); ++i) {
    const Node* n = order[i];
    std::string type = n->type_ ? " : " + names.type_repr(*n->type_) : "";
    const std::string& target = n->target_.str();
    switch (n->op_) {
      case Op::placeholder: {
        std::string def = n->args_.empty() ? "" : " = " + reprs(n->args_[0]);
        free_vars.push_back(target + type + def);
        std::string raw = target;
        std::erase(raw, '*');
        std::string name = names.name_of(n);
        if (raw != name) body += name + " = " + raw + "\n";
        continue;  // placeholders free nothing
      }
      case Op::call_method:
        if (n->args_.empty())
          throw Error("python_code: call_method node " + quoted(n) + " has no self argument (args[0])");
        cat(body, {names.name_of(n), type, " = ", format_target(reprs(n->args_[0]), target), "(",
                   format_args(n->args_, 1, n->kwargs_), ")"});
        break;
      case Op::call_function: {
        const detail::TargetEntry* e = n->target_.entry();
        if (e->magic_format || e->inplace_format) {
          values.clear();  // one vector for every node: no allocation per node
          for (const auto& a : n->args_) values.push_back(reprs(a));
          if (e->magic_format) {
            cat(body, {names.name_of(n), type, " = "});
            append_fields(body, n, e->magic_format, values);
          } else {
            append_fields(body, n, e->inplace_format, values);
            cat(body, {";  ", names.name_of(n), type, " = ", values.at(0)});
          }
          break;
        }
        std::string fn = names.global(e);
        if (fn == "getattr" && n->args_.size() == 2 && n->args_[1].is<std::string>() &&
            detail::is_identifier(n->args_[1].get<std::string>())) {
          cat(body, {names.name_of(n), type, " = ",
                     format_target(reprs(n->args_[0]), n->args_[1].get<std::string>())});
          break;
        }
        cat(body, {names.name_of(n), type, " = ", fn, "(", format_args(n->args_, 0, n->kwargs_), ")"});
        if (const bool* w = n->meta_.get<bool>("is_wrapped"); w && *w) {
          if (std::find(wrapped.begin(), wrapped.end(), fn) == wrapped.end()) wrapped.push_back(fn);
        }
        break;
      }
      case Op::call_module:
        cat(body, {names.name_of(n), type, " = ", format_target(std::string(root_module), target), "(",
                   format_args(n->args_, 0, n->kwargs_), ")"});
        break;
      case Op::get_attr:
        cat(body, {names.name_of(n), type, " = ", format_target(std::string(root_module), target)});
        break;
      case Op::output:
        if (n->type_) return_annotation = " -> " + names.type_repr(*n->type_);
        if (n->args_.empty()) throw Error("python_code: the output node " + quoted(n) + " has no value");
        if (pytree_info_)
          body += "return pytree.tree_unflatten(" + reprs(n->args_[0]) + ", self._out_spec)";
        else
          body += "return " + reprs(n->args_[0]);
        body += '\n';
        continue;
    }
    if (dies_at[i].empty()) {
      body += '\n';
    } else {
      body += ";  ";
      for (Node* dead : dies_at[i]) cat(body, {names.name_of(dead), " = "});
      body += "None\n";
    }
  }
  if (body.empty()) body = "pass\n";

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

  // The source: the header, then the body indented (four spaces after every
  // newline), made in the body's own buffer from the back: a second copy of
  // a large body costs fresh pages.
  std::string header;
  cat(header, {"\n", wrap_stmts, "\n\n", prologue, "\n", "    "});
  const auto lines = static_cast<size_t>(std::count(body.begin(), body.end(), '\n'));
  size_t read = body.size();
  body.resize(header.size() + body.size() + 4 * lines);
  char* data = body.data();
  size_t write = body.size();
  while (read > 0) {
    const size_t newline = std::string_view(data, read).rfind('\n');
    const size_t start = newline == std::string_view::npos ? 0 : newline + 1;
    write -= read - start;
    std::memmove(data + write, data + start, read - start);
    read = start;
    if (newline != std::string_view::npos) {
      write -= 4;
      std::memcpy(data + write, "    ", 4);
      data[--write] = '\n';
      read = newline;
    }
  }
  std::memcpy(data, header.data(), header.size());
  result.src = std::move(body);
  result.globals = names.take_globals();
  return result;
}

}  // namespace fx
