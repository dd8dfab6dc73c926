// FxGraphDrawer: the DOT text of torch/fx/passes/graph_drawer.py 1.13 as
// pydot 1.4 prints it.
#include <fx/passes/graph_drawer.h>
#include <fx/passes/shape_prop.h>

#include <array>
#include <unordered_map>

#include "../ir/repr.h"
#include "md5.h"
#include "module_info.h"

namespace fx::passes {

namespace {

// ---- pydot's quoting --------------------------------------------------------

bool is_alpha_(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// pydot.needs_quotes: whether `s` is not a bare DOT ID.
bool needs_quotes(std::string_view s) {
  for (std::string_view k : {"graph", "subgraph", "digraph", "node", "edge", "strict"})
    if (s == k) return false;
  bool dbl_quoted = s.size() >= 2 && s.front() == '"' && s.back() == '"';
  bool html = s.size() >= 2 && s.front() == '<' && s.back() == '>';
  bool odd_chars = false;
  for (char c : s) odd_chars = odd_chars || static_cast<unsigned char>(c) > 0x7f || c == 0;
  if (odd_chars && !dbl_quoted && !html) return true;
  auto all_of = [&](std::string_view t, auto pred) {
    for (char c : t)
      if (!pred(c)) return false;
    return true;
  };
  // [_a-zA-Z][a-zA-Z0-9_,]*
  if (!s.empty() && is_alpha_(s[0]) &&
      all_of(s.substr(1), [](char c) { return is_alpha_(c) || is_digit(c) || c == ','; }))
    return false;
  // [0-9,]+
  if (!s.empty() && all_of(s, [](char c) { return is_digit(c) || c == ','; })) return false;
  if (dbl_quoted || html) return false;
  // [_a-zA-Z][a-zA-Z0-9_,:"]*[a-zA-Z0-9_,"]+
  if (s.size() >= 2 && is_alpha_(s[0]) &&
      all_of(s.substr(1),
             [](char c) { return is_alpha_(c) || is_digit(c) || c == ',' || c == ':' || c == '"'; }) &&
      s.back() != ':')
    return false;
  // ([^:]*):([^:]*)
  size_t colon = s.find(':');
  if (colon != std::string_view::npos && s.find(':', colon + 1) == std::string_view::npos)
    return needs_quotes(s.substr(0, colon)) || needs_quotes(s.substr(colon + 1));
  return true;
}

// pydot.quote_if_necessary.
std::string quote(std::string_view s) {
  if (s.empty() || !needs_quotes(s)) return std::string(s);
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

// _get_str_for_args_kwargs.
std::string args_label(std::vector<std::string> strs, bool is_kwargs, bool skip_node_names) {
  if (skip_node_names)
    std::erase_if(strs, [](const std::string& s) { return s.find('%') != std::string::npos; });
  if (strs.empty()) return "";
  std::string out = is_kwargs ? "|kwargs={\\l" : "|args=(\\l";
  for (size_t i = 0; i < strs.size(); ++i) out += (i ? ",\\n" : "") + strs[i];
  out += is_kwargs ? ",\\n}\\l" : ",\\n)\\l";
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
    std::string type = dynamic_cast<const GraphModule*>(&leaf)
                           ? "torch.fx.graph_module.GraphModule.__new__.<locals>.GraphModuleImpl"
                           : detail::module_typename(leaf);
    label += "\\n" + escape_braces(type) + "\\n|";
    if (auto constants = detail::module_constants(leaf))
      for (size_t i = 0; i < constants->size(); ++i)
        label += (i ? "\\n" : "") + (*constants)[i].first + ": " + (*constants)[i].second;
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

// pydot's Node.to_string with FX's style dict (attributes sorted by name).
void add_node(std::string& out, std::string_view name, const std::string& fillcolor,
              const std::string& label) {
  out += quote(name);
  out += " [fillcolor=" + quote(fillcolor) + ", fontcolor=\"#000000\", label=" + quote(label) +
         ", shape=record, style=\"filled,rounded\"];\n";
}

void add_edge(std::string& out, std::string_view from, std::string_view to) {
  out += quote(from) + " -> " + quote(to) + ";\n";
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
}

const DotGraph& FxGraphDrawer::get_dot_graph(std::optional<std::string_view> submod_name) const {
  return submod_name ? get_submod_dot_graph(*submod_name) : get_main_dot_graph();
}

const DotGraph& FxGraphDrawer::get_submod_dot_graph(std::string_view submod_name) const {
  std::string key = name_ + "_" + std::string(submod_name);
  for (size_t i = 1; i < graphs_.size(); ++i)
    if (graphs_[i].first == key) return graphs_[i].second;
  throw Error("FxGraphDrawer: no graph for submodule '" + std::string(submod_name) +
              "': only call_module targets that are GraphModules have one");
}

DotGraph FxGraphDrawer::to_dot(const GraphModule& gm, const std::string& name) const {
  std::string out = "digraph " + quote(name) + " {\nrankdir=TB;\n";
  for (Node* n : gm.graph().nodes()) {
    if (ignore_getattr_ && n->op() == Op::get_attr) continue;
    add_node(out, n->name(), fill_color(*n), node_label(gm, *n, skip_node_names_in_args_));
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
      add_node(out, node_name, "Salmon", label);
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
