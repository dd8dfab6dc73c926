#include <fx/passes/const_fold.h>

#include <fx/error.h>
#include <fx/runtime.h>

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "../module/module_dicts.h"
#include "copy_graph.h"
#include "replace_uses.h"

namespace fx::passes {

namespace {

constexpr int kConst = 0, kNonConst = 1;  // torch.fx's partitions "0" and "1"

// One partition of torch.fx.passes.split_module, restricted to what const_fold uses.
struct FoldPartition {
  std::vector<Node*> inputs, outputs;  // insertion-ordered sets of nodes of the original graph
  std::unordered_set<const Node*> input_set, output_set;
  std::vector<int> dependents, dependent_on;
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> env;                // original node -> node of `graph`
  std::vector<std::pair<std::string, std::string>> modules;  // flattened call_module target -> original path
  Node* call = nullptr;                                      // the base graph's call_module of this partition
  bool exists = false;
};

void add_unique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}
void add_unique(std::vector<Node*>& v, std::unordered_set<const Node*>& set, Node* n) {
  if (set.insert(n).second) v.push_back(n);
}

std::string flatten(std::string_view path) {
  std::string s(path);
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

// torch.fx's get_unique_attr_name_in_module: `name`, or name_1, name_2, ...
std::string unique_attr_name(std::string name, const std::unordered_set<std::string>& taken) {
  while (taken.count(name)) {
    size_t us = name.rfind('_');
    bool numbered = us != std::string::npos && us + 1 < name.size() &&
                    std::all_of(name.begin() + static_cast<std::ptrdiff_t>(us + 1), name.end(),
                                [](unsigned char c) { return std::isdigit(c); });
    name =
        numbered ? name.substr(0, us + 1) + std::to_string(std::stoll(name.substr(us + 1)) + 1) : name + "_1";
  }
  return name;
}

std::shared_ptr<torch::nn::Module> shared_module(const GraphModule& from, std::string_view path) {
  torch::nn::Module* m = from.get_submodule(path);
  if (!m)
    throw Error("const_fold: '" + std::string(path) + "' is not a submodule of the module being folded");
  return m->shared_from_this();
}

// What a get_attr target of `from` is, as a GraphModule root entry.
GraphModule::Attr attr_of(const GraphModule& from, const std::string& path) {
  if (from.get_submodule(path)) return GraphModule::Attr(shared_module(from, path));
  at::Tensor t = from.get_tensor(path);
  size_t dot = path.rfind('.');
  torch::nn::Module* owner = from.get_submodule(dot == std::string::npos ? "" : path.substr(0, dot));
  std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  if (owner && owner->named_parameters(/*recurse=*/false).find(name)) return GraphModule::Attr::parameter(t);
  return GraphModule::Attr(t);
}

// The root a graph's get_attr and call_module targets resolve in: tensors
// and modules of `from` (call_module targets flattened: flat -> original path).
// Entries already in `root` are kept.
std::map<std::string, GraphModule::Attr> root_for(
    const Graph& g, const GraphModule& from, const std::unordered_map<std::string, std::string>& module_paths,
    std::map<std::string, GraphModule::Attr> root = {}) {
  for (Node* n : g.nodes()) {
    const std::string& t = n->target().str();
    if (n->op() == Op::get_attr && !root.count(t)) root.emplace(t, attr_of(from, t));
    if (n->op() == Op::call_module && !root.count(t)) {
      auto it = module_paths.find(t);
      root.emplace(t, GraphModule::Attr(shared_module(from, it == module_paths.end() ? t : it->second)));
    }
  }
  return root;
}

at::Tensor folded_tensor(const c10::IValue& v, size_t index) {
  if (v.isTensor()) return v.toTensor();
  if (v.isInt()) return torch::tensor({static_cast<double>(v.toInt())});  // torch.Tensor([i])
  if (v.isDouble()) return torch::tensor({v.toDouble()});
  throw Error("const_fold: output " + std::to_string(index) + " of the constant subgraph is a " +
              python_type_name(v) +
              ", not a tensor or number; skip the node that makes it with skip_folding_node_fn");
}

// The values an in-place call writes (its `self` and `out=`), and every
// value they may alias. Which calls return a view of an input is not known
// for Python-level targets, so every input of a written value counts, up to
// the get_attr nodes: `w.view(-1).add_(1)` changes `w`, and a folded
// `w + w` would keep the value from before. Linear: each node is walked once.
std::unordered_set<const Node*> written_values(const Graph& g) {
  std::unordered_set<const Node*> written;
  std::vector<Node*> stack;
  for (Node* n : g.nodes())
    if (n->impurity() == Impurity::in_place) for_each_written_input(*n, [&](Node* w) { stack.push_back(w); });
  while (!stack.empty()) {
    Node* v = stack.back();
    stack.pop_back();
    if (!written.insert(v).second) continue;
    for (Node* in : v->all_input_nodes()) stack.push_back(in);
  }
  return written;
}

}  // namespace

struct ConstFoldBuilder {
  static std::unique_ptr<FoldedGraphModule> build(GraphModule& m,
                                                  const std::function<bool(const Node&)>& skip_fn);
};

FoldedGraphModule::FoldedGraphModule(const std::map<std::string, Attr>& root, std::unique_ptr<Graph> graph)
    : GraphModule(root, std::move(graph)) {}
FoldedGraphModule::FoldedGraphModule(Module& root, std::unique_ptr<Graph> graph)
    : GraphModule(root, std::move(graph)) {}

std::unique_ptr<FoldedGraphModule> ConstFoldBuilder::build(GraphModule& m,
                                                           const std::function<bool(const Node&)>& skip_fn) {
  const Graph& g = m.graph();
  const std::unordered_set<const Node*> written = written_values(g);
  // The constant nodes: get_attr nodes, and pure nodes all of whose inputs
  // are constant, that nothing in the graph writes.
  std::unordered_set<const Node*> const_nodes;
  bool found = false;
  for (Node* n : g.nodes()) {
    if (n->op() == Op::placeholder || n->op() == Op::output) continue;
    if (written.count(n)) continue;
    if (n->op() != Op::get_attr) {
      bool all_const = true;
      auto check = [&](Node* in) { all_const = all_const && const_nodes.count(in); };
      for (const Argument& a : n->args()) for_each_node(a, check);
      for (const auto& [k, v] : n->kwargs()) for_each_node(v, check);
      if (!all_const) continue;
    }
    if (skip_fn && skip_fn(*n)) continue;
    if (n->is_impure()) continue;
    const_nodes.insert(n);
    if (n->op() != Op::get_attr) found = true;
  }
  if (!found) return std::unique_ptr<FoldedGraphModule>(new FoldedGraphModule(m, detail::copy_graph(g)));

  // ---- split_module(m, mod_partition) -----------------------------------
  FoldPartition parts[2];
  std::vector<int> encounter_order;
  std::unordered_map<const Node*, int> part_of;
  auto record = [&](Node* def, int use_part) {
    auto it = part_of.find(def);
    int def_part = it == part_of.end() ? -1 : it->second;
    if (def_part == use_part) return;
    if (def_part >= 0) {
      add_unique(parts[def_part].outputs, parts[def_part].output_set, def);
      if (use_part >= 0) add_unique(parts[def_part].dependents, use_part);
    }
    if (use_part >= 0) {
      add_unique(parts[use_part].inputs, parts[use_part].input_set, def);
      if (def_part >= 0) add_unique(parts[use_part].dependent_on, def_part);
    }
  };
  for (Node* n : g.nodes()) {
    if (n->op() == Op::placeholder || n->op() == Op::get_attr) continue;
    if (n->op() == Op::output) {
      for (const Argument& a : n->args()) for_each_node(a, [&](Node* d) { record(d, -1); });
      continue;
    }
    int p = const_nodes.count(n) ? kConst : kNonConst;
    if (!parts[p].exists) encounter_order.push_back(p);
    parts[p].exists = true;
    part_of[n] = p;
    for (const Argument& a : n->args()) for_each_node(a, [&](Node* d) { record(d, p); });
    for (const auto& [k, v] : n->kwargs()) for_each_node(v, [&](Node* d) { record(d, p); });
  }
  // Topological order of the partitions, as split_module takes it.
  std::vector<int> roots, sorted;
  for (int p : encounter_order)
    if (parts[p].dependent_on.empty()) roots.push_back(p);
  while (!roots.empty()) {
    int r = roots.back();
    roots.pop_back();
    sorted.push_back(r);
    for (int d : parts[r].dependents) {
      auto& on = parts[d].dependent_on;
      on.erase(std::remove(on.begin(), on.end(), r), on.end());
      if (on.empty()) roots.push_back(d);
    }
  }
  if (sorted.size() != encounter_order.size())
    throw Error("const_fold: a cycle exists between the partitions");

  for (int p : sorted)
    for (Node* in : parts[p].inputs) parts[p].env[in] = parts[p].graph->placeholder(in->name());
  for (Node* n : g.nodes()) {
    auto it = part_of.find(n);
    if (it == part_of.end()) continue;
    FoldPartition& part = parts[it->second];
    auto lookup = [&](Node* x) -> Argument { return part.env.at(x); };
    auto [args, kwargs] = map_args(*n, lookup);
    Target target = n->target();
    if (n->op() == Op::call_module) {
      std::string flat = flatten(target.str());
      part.modules.emplace_back(flat, target.str());
      target = Target(flat);
    }
    part.env[n] = part.graph->create_node(n->op(), target, std::move(args), std::move(kwargs));
  }

  // The base graph: placeholders and get_attrs, then one call per partition.
  auto base = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> base_env;
  std::unordered_set<std::string> split_attrs;  // the split module's top-level attribute names
  for (Node* n : g.nodes()) {
    if (n->op() == Op::placeholder) {
      std::optional<Argument> default_value;
      if (!n->args().empty()) default_value = n->args()[0];
      base_env[n] = base->placeholder(n->target().str(), default_value, n->type());
    } else if (n->op() == Op::get_attr) {
      base_env[n] = base->get_attr(n->target().str());
      const std::string& t = n->target().str();
      split_attrs.insert(t.substr(0, t.find('.')));
    }
  }
  for (int p : sorted) {
    FoldPartition& part = parts[p];
    std::vector<Argument> outs;
    for (Node* o : part.outputs) outs.push_back(part.env.at(o));
    part.graph->output(outs.size() == 1 ? outs[0] : Argument(tuple(std::move(outs))));
    Args call_args;
    for (Node* in : part.inputs) call_args.push_back(base_env.at(in));
    std::string submod = "submod_" + std::to_string(p);
    split_attrs.insert(submod);
    part.call = base->call_module(submod, std::move(call_args));
    if (part.outputs.size() > 1) {
      for (size_t i = 0; i < part.outputs.size(); ++i)
        base_env[part.outputs[i]] =
            base->call_function("operator.getitem", {part.call, static_cast<int64_t>(i)});
    } else if (part.outputs.size() == 1) {
      base_env[part.outputs[0]] = part.call;
    }
  }
  if (Node* out = g.output_node())
    base->output(out->args().empty() ? Argument() : map_arg(out->args()[0], [&](Node* x) -> Argument {
      return base_env.at(x);
    }));

  // Flattened module targets live on the split module too.
  std::unordered_map<std::string, std::string> module_paths;
  for (const FoldPartition& part : parts)
    for (const auto& [flat, path] : part.modules) {
      module_paths.emplace(flat, path);
      split_attrs.insert(flat);
    }

  // ---- the constant subgraph reads the attributes itself ----------------
  FoldPartition& cp = parts[kConst];
  Graph& const_graph = *cp.graph;
  bool multiple_outputs = false;
  for (Node* n : const_graph.nodes()) {
    if (n->op() == Op::output) {
      multiple_outputs = !n->args().empty() && n->args()[0].is<Tuple>();
      continue;
    }
    if (n->op() != Op::placeholder) continue;
    Node* in_node = nullptr;
    for (const Argument& a : cp.call->args())
      if (Node* c = a.node(); c && c->name() == n->target().str()) {
        in_node = c;
        break;
      }
    if (!in_node || in_node->op() != Op::get_attr)
      throw Error("const_fold: input '" + n->target().str() +
                  "' of the constant subgraph is not an attribute");
    Node* attr;
    {
      auto guard = const_graph.inserting_before(n);
      attr = const_graph.get_attr(in_node->target().str());
    }
    n->replace_all_uses_with(attr);
    const_graph.erase_node(n);
  }

  // ---- the main graph reads the folded attributes ------------------------
  std::string attrs_name = unique_attr_name("_FX_CONST_FOLDED_ATTRS", split_attrs);
  {
    Node* folded;
    {
      auto guard = base->inserting_before(cp.call);
      folded = base->get_attr(attrs_name);
    }
    cp.call->replace_all_uses_with(folded);
  }
  base->eliminate_dead_code();

  // _inline_module(split, "submod_1")
  FoldPartition& np = parts[kNonConst];
  if (np.exists && !np.call->erased()) {
    std::unordered_map<const Node*, Argument> mapping;
    size_t ph_count = 0;
    auto lookup = [&](Node* x) -> Argument { return mapping.at(x); };
    for (Node* n : np.graph->nodes()) {
      if (n->op() == Op::placeholder) {
        mapping[n] = np.call->args().at(ph_count++);
      } else if (n->op() == Op::output) {
        detail::replace_uses(np.call, map_arg(n->args()[0], lookup));
      } else {
        auto guard = base->inserting_before(np.call);
        mapping[n] = base->node_copy(*n, lookup);
      }
    }
    base->eliminate_dead_code();
  }

  // ---- the modules --------------------------------------------------------
  // The folded attribute is an empty parameter until run_folding (torch.fx: nn.Parameter()).
  std::map<std::string, GraphModule::Attr> placeholder_attr;
  placeholder_attr.emplace(attrs_name, GraphModule::Attr::parameter(torch::empty({0})));
  auto root = root_for(*base, m, module_paths, std::move(placeholder_attr));
  auto folded_gm = std::unique_ptr<FoldedGraphModule>(new FoldedGraphModule(root, std::move(base)));
  auto const_root = root_for(const_graph, m, module_paths);
  folded_gm->const_subgraph_module_ = std::make_unique<GraphModule>(const_root, std::move(cp.graph));
  folded_gm->attrs_name_ = attrs_name;
  folded_gm->multiple_outputs_ = multiple_outputs;
  return folded_gm;
}

void FoldedGraphModule::run_folding() {
  if (!const_subgraph_module_ || !attrs_name_ || has_folding_been_run_) return;
  c10::IValue out = const_subgraph_module_->run({});
  std::vector<at::Tensor> folded;
  if (multiple_outputs_) {
    if (!out.isTuple()) throw Error("const_fold: the constant subgraph should return a tuple");
    const auto& items = out.toTupleRef().elements();
    for (size_t i = 0; i < items.size(); ++i) folded.push_back(folded_tensor(items[i], i));
  } else {
    folded.push_back(folded_tensor(out, 0));
  }

  // Execution reads each folded value as an attribute of its own:
  // getitem(_FX_CONST_FOLDED_ATTRS, i) becomes get_attr _FX_CONST_FOLDED_ATTRS.i.
  std::unique_ptr<Graph> lowered = detail::copy_graph(graph());
  std::map<std::string, Attr> root;
  for (Node* f : lowered->find_nodes(Op::get_attr, *attrs_name_)) {
    if (!multiple_outputs_) continue;
    for (Node* user : f->users().to_vector()) {
      bool is_index = user->op() == Op::call_function && user->target() == "operator.getitem" &&
                      user->args().size() == 2 && user->args()[0].node() == f &&
                      user->args()[1].is<int64_t>();
      int64_t i = is_index ? user->args()[1].get<int64_t>() : -1;
      if (i < 0 || static_cast<size_t>(i) >= folded.size())
        throw Error("const_fold: node '" + user->name() + "' reads " + *attrs_name_ +
                    " other than by a constant index; the folded values are a list");
      std::string path = *attrs_name_ + "." + std::to_string(i);
      Node* direct;
      {
        auto guard = lowered->inserting_before(user);
        direct = lowered->get_attr(path);
      }
      user->replace_all_uses_with(direct);
      lowered->erase_node(user);
      root.emplace(path, Attr::parameter(folded[i]));
    }
    lowered->erase_node(f);
  }
  if (!multiple_outputs_) root.emplace(*attrs_name_, Attr::parameter(folded[0]));
  root = root_for(*lowered, *this, {}, std::move(root));
  exec_ = std::make_unique<GraphModule>(root, std::move(lowered));
  exec_->train(is_training());
  folded_ = std::move(folded);
  has_folding_been_run_ = true;
}

Value FoldedGraphModule::forward(const std::vector<Value>& args) {
  run_folding();
  return exec_ ? exec_->forward(args) : GraphModule::forward(args);
}

c10::IValue FoldedGraphModule::run(std::vector<c10::IValue> inputs) {
  run_folding();
  return exec_ ? exec_->run(std::move(inputs)) : GraphModule::run(std::move(inputs));
}

std::unique_ptr<FoldedGraphModule> split_const_subgraphs(GraphModule& gm,
                                                         const std::function<bool(const Node&)>& skip_fn) {
  return ConstFoldBuilder::build(gm, skip_fn);
}

std::unique_ptr<FoldedGraphModule> split_const_subgraphs(Module& module,
                                                         const std::function<bool(const Node&)>& skip_fn) {
  std::unique_ptr<GraphModule> traced = symbolic_trace(module);
  return ConstFoldBuilder::build(*traced, skip_fn);
}

bool fold_constants(GraphModule& gm, const std::function<bool(const Node&)>& skip_fn) {
  std::unique_ptr<FoldedGraphModule> folded = ConstFoldBuilder::build(gm, skip_fn);
  if (!folded->has_const_subgraph()) return false;
  folded->run_folding();
  if (!folded->exec_) return false;
  const GraphModule& exec = *folded->exec_;
  // What the folded graph reads that gm lacks: the folded values, and the
  // split's flattened module targets (`layers.0` called as `layers_0`).
  // Shallower paths first, as GraphModule's constructor assigns them.
  std::vector<Node*> missing;
  for (Node* n : exec.graph().nodes()) {
    if (n->op() == Op::call_module && !gm.has_submodule(n->target().str())) missing.push_back(n);
    if (n->op() == Op::get_attr && !gm.has_attribute(n->target().str())) missing.push_back(n);
  }
  auto depth = [](const Node* n) {
    return std::count(n->target().str().begin(), n->target().str().end(), '.');
  };
  std::stable_sort(missing.begin(), missing.end(), [&](Node* a, Node* b) { return depth(a) < depth(b); });
  for (Node* n : missing) {
    const std::string& path = n->target().str();
    auto [parent_path, name] = fx::detail::split_path(path);
    torch::nn::Module* owner = exec.get_submodule(parent_path);
    if (!owner) throw Error("fold_constants: the folded module has no module '" + parent_path + "'");
    if (n->op() == Op::call_module) {
      const auto* child = fx::detail::children_of(*owner).find(name);
      if (!child) throw Error("fold_constants: the folded module has no module '" + path + "'");
      gm.add_submodule(path, *child);
    } else if (fx::detail::parameters_of(*owner).contains(name)) {
      gm.assign_attr(path, GraphModule::Attr::parameter(exec.get_tensor(path)));
    } else {
      gm.assign_attr(path, GraphModule::Attr(exec.get_tensor(path)));
    }
  }
  gm.set_graph(detail::copy_graph(exec.graph()));
  return true;
}

}  // namespace fx::passes
