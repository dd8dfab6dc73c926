// split_module: torch/fx/passes/split_module.py (torch.fx 2.14), step by step.
#include <fx/passes/split_module.h>

#include "../module/module_dicts.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fx::passes {

namespace {

// Python's dict used as an ordered set (FX's `Dict[str, None]`).
template <class T>
class OrderedSet {
 public:
  void add(T x) {
    if (seen_.insert(x).second) items_.push_back(x);
  }
  const std::vector<T>& items() const { return items_; }
  size_t size() const { return items_.size(); }

 private:
  std::vector<T> items_;
  std::unordered_set<T> seen_;
};

struct Partition {
  explicit Partition(int64_t id)
      : name(std::to_string(id)), submod_name("submod_" + name), graph(std::make_unique<Graph>()) {}
  std::string name;
  std::string submod_name;
  OrderedSet<Node*> inputs;   // original nodes this partition reads from elsewhere
  OrderedSet<Node*> outputs;  // original nodes of this partition read elsewhere
  OrderedSet<Partition*> dependents;
  size_t num_dependencies = 0;  // distinct partitions this one reads from, not yet sorted
  OrderedSet<Partition*> dependencies;
  std::unique_ptr<Graph> graph;
  std::unordered_map<const Node*, Node*> environment;  // original node -> node of `graph`
  std::map<std::string, GraphModule::Attr> targets;
  std::vector<Node*> passed;  // the inputs the base module passes (a module is read by get_attr instead)
};

std::vector<std::string> atoms_of(const std::string& path) {
  std::vector<std::string> atoms;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    atoms.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return atoms;
    start = dot + 1;
  }
}

// What a call_module / get_attr target names in `m`: a module, a parameter
// (nn.Parameter) or another tensor; nullopt when `m` has nothing there.
std::optional<GraphModule::Attr> lookup(const GraphModule& m, const std::string& target) {
  std::vector<std::string> atoms = atoms_of(target);
  const torch::nn::Module* cur = &m;
  std::shared_ptr<torch::nn::Module> found;
  for (size_t i = 0; i < atoms.size(); ++i) {
    const std::string& atom = atoms[i];
    if (const auto* child = fx::detail::children_of(*cur).find(atom)) {
      found = *child;
      cur = child->get();
      continue;
    }
    if (i + 1 != atoms.size()) return std::nullopt;
    auto t = fx::detail::tensor_entry(*cur, atom);
    if (!t) return std::nullopt;
    return t->second == fx::detail::TensorKind::parameter ? GraphModule::Attr::parameter(t->first)
                                                          : GraphModule::Attr(t->first);
  }
  return GraphModule::Attr(found);
}

std::string join_atoms(const std::string& target) {
  std::string out = target;
  for (char& c : out)
    if (c == '.') c = '_';
  return out;
}

}  // namespace

std::unique_ptr<GraphModule> split_module(GraphModule& m, Module& /*root_m*/,
                                          const SplitCallback& split_callback,
                                          std::map<std::string, std::string>* qualname_map,
                                          bool keep_original_order) {
  if (!split_callback)
    throw Error("split_module: split_callback is empty; give a function Node* -> partition id");
  const Graph& graph = m.graph();

  // Partitions in order of their first node (FX's dict of partitions).
  std::vector<std::unique_ptr<Partition>> partitions;
  std::unordered_map<int64_t, Partition*> by_id;
  std::unordered_map<const Node*, Partition*> partition_of;

  auto record_cross_partition_use = [&](Node* def_node, Node* use_node) {
    auto def_it = partition_of.find(def_node);
    Partition* def_partition = def_it == partition_of.end() ? nullptr : def_it->second;
    Partition* use_partition = nullptr;
    if (use_node) use_partition = partition_of.at(use_node);
    if (def_partition == use_partition) return;
    if (def_partition) {
      def_partition->outputs.add(def_node);
      if (use_partition) def_partition->dependents.add(use_partition);
    }
    if (use_partition) {
      use_partition->inputs.add(def_node);
      if (def_partition) use_partition->dependencies.add(def_partition);
    }
  };

  // Split the nodes into partitions.
  for (Node* node : graph.nodes()) {
    if (node->op() == Op::placeholder || node->op() == Op::get_attr) continue;
    if (node->op() == Op::output) {
      if (!node->args().empty())
        for_each_node(node->args()[0], [&](Node* n) { record_cross_partition_use(n, nullptr); });
      continue;
    }
    int64_t id;
    try {
      id = split_callback(node);
    } catch (const std::exception& e) {
      throw Error("split_module: split_callback failed on node '" + node->name() + "' (" +
                  std::string(op_name(node->op())) + " " + node->target().str() + "): " + e.what());
    }
    Partition*& partition = by_id[id];
    if (!partition) partition = partitions.emplace_back(std::make_unique<Partition>(id)).get();
    partition_of.emplace(node, partition);
    for (const Argument& a : node->args())
      for_each_node(a, [&](Node* d) { record_cross_partition_use(d, node); });
    for (const auto& kv : node->kwargs())
      for_each_node(kv.second, [&](Node* d) { record_cross_partition_use(d, node); });
  }

  // Topological order of the partitions, with FX's stack of ready partitions.
  std::vector<Partition*> root_partitions;
  for (auto& p : partitions) {
    p->num_dependencies = p->dependencies.size();
    if (p->num_dependencies == 0) root_partitions.push_back(p.get());
  }
  std::vector<Partition*> sorted_partitions;
  std::unordered_set<const Partition*> sorted;
  while (!root_partitions.empty()) {
    Partition* root = root_partitions.back();
    root_partitions.pop_back();
    sorted_partitions.push_back(root);
    sorted.insert(root);
    for (Partition* dependent : root->dependents.items())
      if (--dependent->num_dependencies == 0) root_partitions.push_back(dependent);
  }
  if (sorted_partitions.size() != partitions.size()) {
    // Name one edge between two partitions of the cycle, for the message.
    for (Node* node : graph.nodes()) {
      auto it = partition_of.find(node);
      if (it == partition_of.end() || sorted.count(it->second)) continue;
      for (Node* in : node->all_input_nodes()) {
        auto def = partition_of.find(in);
        if (def == partition_of.end() || def->second == it->second || sorted.count(def->second)) continue;
        throw Error("split_module: cycle exists between partitions! Node '" + node->name() + "' (partition " +
                    it->second->name + ") uses '" + in->name() + "' (partition " + def->second->name +
                    "), and partition " + def->second->name + " depends on partition " + it->second->name +
                    " too; make split_callback give partitions that only read values of earlier ones");
      }
    }
    throw Error("split_module: cycle exists between partitions!");
  }

  std::unordered_map<Target, std::optional<GraphModule::Attr>> attrs;  // one lookup per target
  auto attr_of = [&](Node* node) -> const GraphModule::Attr& {
    auto [it, fresh] = attrs.try_emplace(node->target());
    if (fresh) it->second = lookup(m, node->target().str());
    if (!it->second)
      throw Error("split_module: node '" + node->name() + "' (" + std::string(op_name(node->op())) +
                  "): target " + node->target().str() + " not found in the module being split");
    return *it->second;
  };

  // Placeholders of the partitions. A module read by get_attr in another
  // partition (a cond's branch) is not passed, as torch.fx 2.x does: the
  // partition holds it and reads it with get_attr, after its placeholders.
  for (Partition* partition : sorted_partitions) {
    std::vector<Node*> modules;
    for (Node* input : partition->inputs.items()) {
      if (input->op() == Op::get_attr && attr_of(input).module()) {
        modules.push_back(input);
        continue;
      }
      // torch.fx 2.x gives the placeholder the type of the value it receives
      // (`def forward(self, x : torch.Tensor)` when the traced input was annotated).
      Node* placeholder = partition->graph->placeholder(input->name(), std::nullopt, input->type());
      placeholder->meta() = input->meta();
      partition->environment[input] = placeholder;
      partition->passed.push_back(input);
    }
    for (Node* input : modules) {
      Node* g = partition->graph->get_attr(input->target().str());
      g->meta() = input->meta();
      partition->targets.insert_or_assign(input->target().str(), attr_of(input));
      partition->environment[input] = g;
    }
  }

  // Each node into its partition's graph; call_module targets become the
  // partition's own submodules.
  for (Node* node : graph.nodes()) {
    auto it = partition_of.find(node);
    if (it == partition_of.end()) continue;
    Partition& partition = *it->second;
    auto env = [&](Node* n) -> Argument { return partition.environment.at(n); };
    auto [args, kwargs] = map_args(*node, env);
    Target target = node->target();
    if (node->op() == Op::call_module || node->op() == Op::get_attr) {
      const GraphModule::Attr& attr = attr_of(node);
      std::string name = join_atoms(node->target().str());
      partition.targets.insert_or_assign(name, attr);
      if (qualname_map) (*qualname_map)[partition.submod_name + "." + name] = node->target().str();
      target = Target(name);
    }
    Node* new_node = partition.graph->create_node(node->op(), target, std::move(args), std::move(kwargs),
                                                  std::nullopt, node->type());
    new_node->meta() = node->meta();
    partition.environment[node] = new_node;
  }

  // The base module: inputs and attributes first.
  auto base_graph = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> base_env;
  std::map<std::string, GraphModule::Attr> base_attrs;
  for (Node* node : graph.nodes()) {
    if (node->op() == Op::placeholder) {
      std::optional<Argument> default_value;
      if (!node->args().empty()) default_value = node->args()[0];
      Node* p = base_graph->placeholder(node->target().str(), std::move(default_value), node->type());
      p->meta() = node->meta();
      base_env[node] = p;
    } else if (node->op() == Op::get_attr) {
      Node* g = base_graph->get_attr(node->target().str());
      g->meta() = node->meta();
      base_env[node] = g;
      base_attrs.insert_or_assign(node->target().str(), attr_of(node));
    }
  }

  // Then, per partition: its output, its GraphModule, and the call to it.
  std::vector<Partition*> construct_order = sorted_partitions;
  if (keep_original_order) {
    construct_order.clear();
    for (auto& p : partitions) construct_order.push_back(p.get());
  }
  for (Partition* partition : construct_order) {
    std::vector<Argument> output_vals;
    for (Node* out : partition->outputs.items()) output_vals.emplace_back(partition->environment.at(out));
    partition->graph->output(output_vals.size() == 1 ? output_vals[0] : Argument(tuple(output_vals)));
    const std::string submod_name = partition->submod_name;
    auto submod = std::make_shared<GraphModule>(partition->targets, std::move(partition->graph));
    base_attrs.insert_or_assign(submod_name, GraphModule::Attr(submod));

    Args call_args;
    for (Node* input : partition->passed) {
      auto found = base_env.find(input);
      if (found == base_env.end())
        throw Error("split_module: keep_original_order puts " + submod_name +
                    " before the partition computing '" + input->name() +
                    "', which it reads; use keep_original_order=false (topological order) or "
                    "partitions whose first nodes come in dependency order");
      call_args.emplace_back(found->second);
    }
    Node* output_val = base_graph->call_module(submod_name, std::move(call_args));
    const auto& outputs = partition->outputs.items();
    if (outputs.size() > 1) {
      // FX unpacks through a Proxy: `submod_0[i]`, operator.getitem nodes.
      for (size_t i = 0; i < outputs.size(); ++i)
        base_env[outputs[i]] =
            base_graph->call_function("operator.getitem", {output_val, static_cast<int64_t>(i)});
    } else if (outputs.size() == 1) {
      base_env[outputs[0]] = output_val;
    }
  }

  for (Node* node : graph.nodes())
    if (node->op() == Op::output)
      base_graph->output(node->args().empty()
                             ? Argument(None)
                             : map_arg(node->args()[0], [&](Node* n) -> Argument { return base_env.at(n); }));
  return std::make_unique<GraphModule>(base_attrs, std::move(base_graph));
}

}  // namespace fx::passes
