// FxGraphDrawer: the DOT text of torch/fx/passes/graph_drawer.py (torch 2.14)
// as pydot 4 prints it.
#include <fx/nn/module_traits.h>
#include <fx/passes/graph_drawer.h>
#include <fx/passes/shape_prop.h>

#include <array>
#include <functional>
#include <initializer_list>
#include <optional>
#include <unordered_map>

#include "../ir/repr.h"
#include "md5.h"

namespace fx::passes {

namespace {

// ---- pydot's quoting (pydot 4: core.py) ------------------------------------

bool is_alpha_(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

template <class Pred>
bool all_of(std::string_view s, Pred pred) {
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}

std::string to_lower(std::string_view s) {
  std::string lower(s);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return lower;
}

// pydot compares names with the DOT keywords case-insensitively (s.lower()).
bool is_dot_keyword(std::string_view s) {
  std::string lower = to_lower(s);
  for (std::string_view k : {"graph", "subgraph", "digraph", "node", "edge", "strict"})
    if (lower == k) return true;
  return false;
}

// pydot's re_numeric: ^([0-9]+\.?[0-9]*|[0-9]*\.[0-9]+)$, i.e. digits with at
// most one '.', and at least one digit.
bool is_numeric(std::string_view s) {
  size_t dot = s.find('.');
  if (dot != std::string_view::npos && s.find('.', dot + 1) != std::string_view::npos) return false;
  size_t digits = 0;
  for (char c : s) {
    if (c == '.') continue;
    if (!is_digit(c)) return false;
    ++digits;
  }
  return digits > 0;
}

// pydot.any_needs_quotes: true, false, or nullopt when it cannot tell.
std::optional<bool> any_needs_quotes(std::string_view s) {
  if (!s.empty() && all_of(s, is_digit)) return false;
  if (!s.empty() && all_of(s, is_alnum)) return is_digit(s[0]);
  bool dbl_quoted = s.size() >= 2 && s.front() == '"' && s.back() == '"';
  bool html = s.size() >= 2 && s.front() == '<' && s.back() == '>';
  bool high_chars = !all_of(s, [](char c) { return static_cast<unsigned char>(c) <= 0x7f && c != 0; });
  if (high_chars && !dbl_quoted && !html) return true;
  if (is_numeric(s) || dbl_quoted || html) return false;
  return std::nullopt;
}

// pydot.id_needs_quotes: whether `s` is not a bare DOT ID.
bool id_needs_quotes(std::string_view s) {
  if (is_dot_keyword(s)) return false;
  if (auto any = any_needs_quotes(s)) return *any;
  // ^[_a-zA-Z][a-zA-Z0-9_]*$
  if (!s.empty() && is_alpha_(s[0]) &&
      all_of(s.substr(1), [](char c) { return is_alpha_(c) || is_digit(c); }))
    return false;
  // ^[_a-zA-Z][a-zA-Z0-9_:"]*[a-zA-Z0-9_"]+$
  if (s.size() >= 2 && is_alpha_(s[0]) &&
      all_of(s.substr(1), [](char c) { return is_alpha_(c) || is_digit(c) || c == ':' || c == '"'; }) &&
      s.back() != ':')
    return false;
  // ^([^:]*):([^:]*)$
  size_t colon = s.find(':');
  if (colon != std::string_view::npos && s.find(':', colon + 1) == std::string_view::npos)
    return id_needs_quotes(s.substr(0, colon)) || id_needs_quotes(s.substr(colon + 1));
  return true;
}

// pydot.make_quoted.
std::string make_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out + "\"";
}

// pydot.quote_id_if_necessary, for node and graph names. A node's own
// statement leaves the keywords graph/node/edge bare (Node.to_string passes
// them as unquoted_keywords); an edge's endpoints and a graph's name do not.
std::string quote_id(std::string_view s, bool node_statement = false) {
  if (s.empty()) return std::string(s);
  if (is_dot_keyword(s)) {
    std::string lower = to_lower(s);
    if (node_statement && (lower == "graph" || lower == "node" || lower == "edge")) return std::string(s);
    return make_quoted(s);
  }
  return id_needs_quotes(s) ? make_quoted(s) : std::string(s);
}

// pydot.quote_attr_if_necessary, for attribute values: quoted unless surely
// safe bare.
std::string quote_attr(std::string_view s) {
  if (s.empty()) return "\"\"";  // Common._format_attr writes "" for an empty value
  if (is_dot_keyword(s)) return make_quoted(s);
  auto any = any_needs_quotes(s);
  if (any && !*any) return std::string(s);
  return make_quoted(s);
}

std::string escape_braces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '{' || c == '}') out += '\\';
    out += c;
  }
  return out;
}

// ---- FX's labels --------------------------------------------------------------

constexpr std::array<const char*, 16> kHashColors = {
    "CadetBlue1",     "Coral",        "DarkOliveGreen1", "DarkSeaGreen1", "GhostWhite",     "Khaki1",
    "LavenderBlush1", "LightSkyBlue", "MistyRose1",      "MistyRose2",    "PaleTurquoise2", "PeachPuff1",
    "Salmon",         "Thistle1",     "Thistle3",        "Wheat1"};

// FX's _get_node_style: fixed colours per opcode, else one chosen by
// int(md5(target).hexdigest()[:8], 16) % 16.
std::string fill_color(const Node& n) {
  switch (n.op()) {
    case Op::placeholder:
      return "\"AliceBlue\"";
    case Op::call_module:
      return "LemonChiffon1";
    case Op::get_attr:
      return "LightGrey";
    case Op::output:
      return "PowderBlue";
    default:
      break;
  }
  auto digest = detail::md5(n.target().str());
  uint32_t h = uint32_t(digest[0]) << 24 | uint32_t(digest[1]) << 16 | uint32_t(digest[2]) << 8 | digest[3];
  return kHashColors[h % kHashColors.size()];
}

// _get_qualified_name for a call_function target; the name itself otherwise.
std::string target_typename(const Node& n) {
  if (n.op() != Op::call_function) return escape_braces(n.target().str());
  Target t = n.target();
  if (t.python_module() == "builtins") return escape_braces(t.python_name());
  if (t.python_module().empty()) return escape_braces(t.str());
  return escape_braces(std::string(t.python_module()) + "." + std::string(t.python_name()));
}

// _format_arg(arg, max_list_len=8): only the top level is shortened.
std::string format_arg(const Argument& a) {
  const std::vector<Argument>* items = nullptr;
  bool is_tuple = false;
  if (const auto* l = std::get_if<List>(&a.storage())) items = &l->items;
  if (const auto* t = std::get_if<Tuple>(&a.storage())) {
    items = &t->items;
    is_tuple = true;
  }
  std::string out;
  if (!items) {
    fx::detail::append_format_arg(out, a);
    return out;
  }
  constexpr size_t kMax = 8;
  out += is_tuple ? '(' : '[';
  for (size_t i = 0; i < items->size() && i < kMax; ++i) {
    if (i) out += ", ";
    fx::detail::append_format_arg(out, (*items)[i]);
  }
  if (is_tuple && items->size() == 1) out += ',';
  if (items->size() > kMax) out += ", ...[total_len=" + std::to_string(items->size()) + "]";
  out += is_tuple ? ')' : ']';
  return out;
}

// _get_str_for_args_kwargs. A single item is written on one line: FX drops
// every "\l" and "\n" from the text then, the item's own included.
std::string args_label(std::vector<std::string> strs, bool is_kwargs, bool skip_node_names) {
  if (skip_node_names)
    std::erase_if(strs, [](const std::string& s) { return s.find('%') != std::string::npos; });
  if (strs.empty()) return "";
  std::string out = is_kwargs ? "|kwargs={\\l" : "|args=(\\l";
  for (size_t i = 0; i < strs.size(); ++i) out += (i ? ",\\n" : "") + strs[i];
  out += is_kwargs ? ",\\n}\\l" : ",\\n)\\l";
  if (strs.size() == 1) {
    // str.replace(r"\l", "") and then str.replace(r"\n", ""), each left to right.
    for (std::string_view pat : {"\\l", "\\n"}) {
      std::string kept;
      for (size_t i = 0; i < out.size();) {
        if (out.compare(i, pat.size(), pat) == 0) {
          i += pat.size();
        } else {
          kept += out[i++];
        }
      }
      out = std::move(kept);
    }
  }
  return escape_braces(out);
}

std::string float_list(const std::vector<double>& v, bool as_int) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") +
           (as_int ? std::to_string(static_cast<int64_t>(v[i])) : fx::detail::repr_float(v[i]));
  return out + "]";
}

// _stringify_tensor_meta.
std::string tensor_meta_label(const TensorMetadata& tm) {
  std::string out = "|dtype=" + fx::detail::repr_dtype(tm.dtype) + "\\n";
  out += "|shape=" + fx::detail::repr_int_tuple(tm.shape) + "\\n";
  out += std::string("|requires_grad=") + (tm.requires_grad ? "True" : "False") + "\\n";
  out += "|stride=" + fx::detail::repr_int_tuple(tm.stride) + "\\n";
  if (tm.is_quantized && tm.qparams) {
    const QParams& q = *tm.qparams;
    if (!q.per_channel()) {
      out += "|q_scale=" + fx::detail::repr_float(q.scale.at(0)) + "\\n";
      out += "|q_zero_point=" + std::to_string(static_cast<int64_t>(q.zero_point.at(0))) + "\\n";
    } else {
      out += "|q_per_channel_scale=" + float_list(q.scale, false) + "\\n";
      out += "|q_per_channel_zero_point=" +
             float_list(q.zero_point, q.qscheme != c10::kPerChannelAffineFloatQParams) + "\\n";
      out += "|q_per_channel_axis=" + std::to_string(*q.axis) + "\\n";
    }
    out += "|qscheme=torch." + c10::toString(q.qscheme) + "\\n";
  }
  return out;
}

// torch.float32[4, 3, 3, 3]\n
std::string tensor_label(const at::Tensor& t) {
  std::string out = fx::detail::repr_dtype(t.scalar_type()) + "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]\\n";
}

const torch::nn::Module& leaf_module(const GraphModule& gm, const Node& n) {
  const torch::nn::Module* m = gm.get_submodule(n.target().str());
  if (!m)
    throw Error("FxGraphDrawer: node '" + n.name() + "' calls module '" + n.target().str() +
                "', which the GraphModule does not have; add it (add_submodule) or fix the target");
  return *m;
}

std::string node_label(const GraphModule& gm, const Node& n, bool skip_node_names) {
  std::string label = "{name=%" + n.name() + "|op_code=" + std::string(op_name(n.op())) + "\n";
  if (n.op() == Op::call_module) {
    const torch::nn::Module& leaf = leaf_module(gm, n);
    // torch.typename(module) and the class's __constants__, as the module's traits know them.
    const auto* fm = dynamic_cast<const Module*>(&leaf);
    const nn::ModuleTraits* traits = fm ? nn::find_module_traits(fm->type_name()) : nullptr;
    std::string type = dynamic_cast<const GraphModule*>(&leaf)
                           ? "torch.fx.graph_module.GraphModule.__new__.<locals>.GraphModuleImpl"
                       : !fm                                       ? leaf.name()
                       : traits && !traits->torch_typename.empty() ? traits->torch_typename
                                                                   : fm->type_name();
    label += "\\n" + escape_braces(type) + "\\n|";
    if (traits && traits->constants) {
      nn::ModuleConstants constants = traits->constants(*fm);
      for (size_t i = 0; i < constants.size(); ++i)
        label += (i ? "\\n" : "") + constants[i].first + ": " + constants[i].second;
    }
    label += "\\n";
  } else {
    label += "|target=" + target_typename(n) + "\\n";
    if (!n.args().empty()) {
      std::vector<std::string> strs;
      for (const auto& a : n.args()) strs.push_back(format_arg(a));
      label += args_label(std::move(strs), false, skip_node_names);
    }
    if (!n.kwargs().empty()) {
      std::vector<std::string> strs;
      for (const auto& [k, v] : n.kwargs()) strs.push_back(k + ": " + format_arg(v));
      label += args_label(std::move(strs), true, skip_node_names);
    }
    label += "|num_users=" + std::to_string(n.num_users()) + "\\n";
  }
  // FX raises for a non-tensor leaf other than None inside the structure;
  // fxcpp shows nothing for it.
  for_each_tensor_meta(n, [&](const TensorMetadata& tm) { label += tensor_meta_label(tm); });
  return label + "}";
}

// pydot's Node.to_string: the attributes in the order of FX's dict.
void add_node(std::string& out, std::string_view name,
              std::initializer_list<std::pair<std::string_view, std::string_view>> attrs) {
  out += quote_id(name, /*node_statement=*/true) + " [";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    out += first ? "" : ", ";
    out += std::string(key) + "=" + quote_attr(value);
    first = false;
  }
  out += "];\n";
}

// A node of the graph: pydot.Node(node.name, label=..., **_get_node_style(node)).
void add_graph_node(std::string& out, std::string_view name, const std::string& fillcolor,
                    const std::string& label) {
  add_node(out, name,
           {{"label", label},
            {"shape", "record"},
            {"fillcolor", fillcolor},
            {"style", "\"filled,rounded\""},
            {"fontcolor", "#000000"}});
}

// A parameter or buffer: pydot.Node(pname, label=..., **_WEIGHT_TEMPLATE),
// whose "shape" FxGraphDrawer.__init__ adds after the other three.
void add_weight_node(std::string& out, std::string_view name, const std::string& label) {
  add_node(out, name,
           {{"label", label},
            {"fillcolor", "Salmon"},
            {"style", "\"filled,rounded\""},
            {"fontcolor", "#000000"},
            {"shape", "record"}});
}

void add_edge(std::string& out, std::string_view from, std::string_view to) {
  out += quote_id(from) + " -> " + quote_id(to) + ";\n";
}

}  // namespace

FxGraphDrawer::FxGraphDrawer(const GraphModule& graph_module, std::string name, bool ignore_getattr,
                             bool ignore_parameters_and_buffers, bool skip_node_names_in_args)
    : name_(std::move(name)),
      ignore_getattr_(ignore_getattr),
      ignore_parameters_and_buffers_(ignore_parameters_and_buffers),
      skip_node_names_in_args_(skip_node_names_in_args) {
  graphs_.emplace_back(name_, to_dot(graph_module, name_));
  // A GraphModule called several times is drawn once (FX's dict keeps one).
  std::unordered_map<std::string, size_t> index;
  for (Node* n : graph_module.graph().nodes()) {
    if (n->op() != Op::call_module) continue;
    const auto* sub = dynamic_cast<const GraphModule*>(&leaf_module(graph_module, *n));
    if (!sub) continue;
    std::string sub_name = name_ + "_" + n->target().str();
    auto [it, fresh] = index.emplace(sub_name, graphs_.size());
    DotGraph dot = to_dot(*sub, sub_name);
    if (fresh)
      graphs_.emplace_back(sub_name, std::move(dot));
    else
      graphs_[it->second].second = std::move(dot);
  }
  // The branches of cond and while_loop (GraphModules read by get_attr),
  // and theirs in turn, as `<name>_<path>`: torch.fx 2.14 draws called
  // submodules only, so a captured cond's branches had no picture.
  std::function<void(const GraphModule&, const std::string&)> add_branches = [&](const GraphModule& gm,
                                                                                 const std::string& prefix) {
    for (Node* n : gm.graph().nodes()) {
      if (n->op() != Op::get_attr) continue;
      const auto* branch = dynamic_cast<const GraphModule*>(gm.get_submodule(n->target().str()));
      if (!branch) continue;
      const std::string path = prefix.empty() ? n->target().str() : prefix + "." + n->target().str();
      const std::string sub_name = name_ + "_" + path;
      if (!index.emplace(sub_name, graphs_.size()).second) continue;
      graphs_.emplace_back(sub_name, to_dot(*branch, sub_name));
      add_branches(*branch, path);
    }
  };
  add_branches(graph_module, "");
}

const DotGraph& FxGraphDrawer::get_dot_graph(std::optional<std::string_view> submod_name) const {
  return submod_name ? get_submod_dot_graph(*submod_name) : get_main_dot_graph();
}

const DotGraph& FxGraphDrawer::get_submod_dot_graph(std::string_view submod_name) const {
  std::string key = name_ + "_" + std::string(submod_name);
  for (size_t i = 1; i < graphs_.size(); ++i)
    if (graphs_[i].first == key) return graphs_[i].second;
  throw Error(
      "FxGraphDrawer: no graph for submodule '" + std::string(submod_name) +
      "': only call_module targets that are GraphModules, and cond and while_loop branches, have one");
}

DotGraph FxGraphDrawer::to_dot(const GraphModule& gm, const std::string& name) const {
  std::string out = "digraph " + quote_id(name) + " {\nrankdir=TB;\n";
  for (Node* n : gm.graph().nodes()) {
    if (ignore_getattr_ && n->op() == Op::get_attr) continue;
    add_graph_node(out, n->name(), fill_color(*n), node_label(gm, *n, skip_node_names_in_args_));
    if (n->op() != Op::call_module || ignore_parameters_and_buffers_) continue;
    const torch::nn::Module& leaf = leaf_module(gm, *n);
    if (dynamic_cast<const GraphModule*>(&leaf)) continue;
    auto add = [&](const std::string& pname, const at::Tensor& t, bool parameter) {
      if (!t.defined()) return;
      std::string node_name = n->name() + "." + pname;
      // FX's `a + b if is_param else c` binds as `(a + b) if is_param else c`:
      // a buffer's label is just "buffer\l".
      std::string label = "{" +
                          (parameter ? node_name + "|op_code=get_parameter" : std::string("buffer\\l")) +
                          tensor_label(t) + "}";
      add_weight_node(out, node_name, label);
      add_edge(out, node_name, n->name());
    };
    for (const auto& p : leaf.named_parameters(/*recurse=*/true)) add(p.key(), p.value(), true);
    for (const auto& b : leaf.named_buffers(/*recurse=*/true)) add(b.key(), b.value(), false);
  }
  for (Node* n : gm.graph().nodes()) {
    if (ignore_getattr_ && n->op() == Op::get_attr) continue;
    for (Node* user : n->users()) add_edge(out, n->name(), user->name());
  }
  out += "}\n";
  return DotGraph(name, std::move(out));
}

}  // namespace fx::passes
