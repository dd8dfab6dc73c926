// GraphModule: attributes copied from the root, code, and the execution plan
// (runtime/execution_plan.h) that forward runs.
#include <fx/graph_module.h>
#include <fx/interpreter.h>
#include <fx/pytree.h>
#include <fx/tracer.h>

#include "../ir/flat_map.h"
#include "../runtime/execution_plan.h"
#include "../runtime/module_ivalue.h"
#include "module_dicts.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

namespace fx {

namespace {

// forward's parameters: the placeholders' (names and defaults, in order) as
// recompile's plan found them, or, for a graph traced with structured
// concrete_args, the original parameters (torch.fx's
// _PyTreeCodeGen.gen_fn_def: no defaults).
std::vector<Module::Param> parameters_of(const Graph& g, const std::vector<std::string>& names,
                                         const std::vector<std::optional<c10::IValue>>& defaults) {
  std::vector<Module::Param> params;
  if (const auto& info = g.pytree_info()) {
    for (const auto& name : info->orig_args)
      if (name != "self") params.emplace_back(name);
    return params;
  }
  params.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (defaults[i])
      params.emplace_back(names[i], Value(*defaults[i]));
    else
      params.emplace_back(names[i]);
  }
  return params;
}

// An empty module standing for an intermediate level of a dotted path.
class Container final : public Module {
 public:
  Container() : Module("torch.nn.Module", {}) {}
  Value forward(const std::vector<Value>&) override {
    throw Error("a container module made for a dotted path has no forward");
  }
};

torch::nn::Module* child_of(torch::nn::Module* m, const std::string& name) {
  const auto* found = detail::children_of(*m).find(name);
  return found ? found->get() : nullptr;
}

std::optional<at::Tensor> tensor_of(const torch::nn::Module& m, const std::string& name) {
  auto entry = detail::tensor_entry(m, name);
  return entry ? std::optional(entry->first) : std::nullopt;
}

}  // namespace

// What copying a root's attributes looks up. The root's modules and tensors
// are found by walking the path, as FX's _copy_attr does with getattr, so
// nothing is indexed that the graph does not name.
struct GraphModule::RootIndex {
  RootIndex(Module& r, GraphModule& self) : root(r) {
    here.emplace("", &self);
    owned.insert(&self);
  }
  std::shared_ptr<torch::nn::Module> root_module(std::string_view path) const {
    const auto* found = detail::find_submodule(root, path);
    return found ? *found : nullptr;
  }
  // The root's parameter, buffer or tensor attribute at `path`, or nullopt.
  std::optional<std::pair<at::Tensor, detail::TensorKind>> root_tensor(const std::string& path) const {
    auto [parent_path, name] = detail::split_path(path);
    const torch::nn::Module* parent = &root;
    if (!parent_path.empty()) {
      const auto* found = detail::find_submodule(root, parent_path);
      if (!found) return std::nullopt;
      parent = found->get();
    }
    return detail::tensor_entry(*parent, name);
  }
  // This GraphModule's module at `path`, or nullptr.
  torch::nn::Module* find(const std::string& path) {
    if (auto it = here.find(path); it != here.end()) return it->second;
    auto [parent_path, name] = detail::split_path(path);
    torch::nn::Module* parent = find(parent_path);
    if (!parent || !expanded.insert(parent_path).second) return nullptr;
    for (const auto& c : parent->named_children())  // once per parent: index all its children
      here.emplace(parent_path.empty() ? c.key() : parent_path + "." + c.key(), c.value().get());
    auto it = here.find(path);
    return it == here.end() ? nullptr : it->second;
  }

  Module& root;
  std::unordered_map<std::string, torch::nn::Module*> here;  // this module's tree, by path
  std::unordered_set<std::string> expanded;                  // paths whose children are in `here`
  std::unordered_set<const torch::nn::Module*> owned;        // this and the containers made here
  std::unordered_set<std::string> copied;                    // tensor paths copied so far
};

struct GraphModule::ModuleMemo {
  void remember(const Target& target, torch::nn::Module* m) {
    *by_target.try_emplace(target.entry()).first = m;
  }
  // By interned target: a lookup hashes a pointer, not the path.
  detail::FlatMap<const void*, torch::nn::Module*, std::hash<const void*>> by_target;
};

// The memo lives while the outermost of the constructor and recompile() runs.
struct GraphModule::MemoScope {
  explicit MemoScope(GraphModule& gm) : owner(gm.memo_ ? nullptr : &gm) {
    if (owner) owner->memo_ = std::make_unique<ModuleMemo>();
  }
  ~MemoScope() {
    if (owner) owner->memo_.reset();
  }
  MemoScope(const MemoScope&) = delete;
  MemoScope& operator=(const MemoScope&) = delete;
  GraphModule* owner;
};

GraphModule::GraphModule(Module& root, std::unique_ptr<Graph> graph, std::string class_name)
    : Module(std::move(class_name), {}),  // recompile() sets forward's parameters
      graph_(std::move(graph)) {
  if (!graph_) throw Error("GraphModule: the graph is null");
  train(root.is_training());  // torch.fx: self.training = root.training (no children yet: only this flag)
  MemoScope memo(*this);
  RootIndex index(root, *this);
  for (Node* n : graph_->nodes()) {
    if (n->op() != Op::get_attr && n->op() != Op::call_module) continue;
    torch::nn::Module* placed = copy_attr(index, n->target().str(), n->op() == Op::call_module);
    if (placed && n->op() == Op::call_module) memo_->remember(n->target(), placed);
  }
  graph_->set_owning_module(this);
  recompile();
}

GraphModule::GraphModule(const std::map<std::string, Attr>& root, std::unique_ptr<Graph> graph,
                         std::string class_name)
    : Module(std::move(class_name), {}),  // recompile() sets forward's parameters
      graph_(std::move(graph)) {
  if (!graph_) throw Error("GraphModule: the graph is null");
  std::vector<const std::string*> targets;  // each once (interned: the strings outlive this loop)
  std::unordered_set<std::string_view> seen;
  for (Node* n : graph_->nodes()) {
    if (n->op() != Op::get_attr && n->op() != Op::call_module) continue;
    const std::string& target = n->target().str();
    if (!root.count(target))
      throw Error("GraphModule: node '" + n->name() + "' (" + std::string(op_name(n->op())) +
                  ") refers to target '" + target +
                  "', but the map given as root has no entry for it; add one under '" + target + "'");
    if (seen.insert(target).second) targets.push_back(&target);
  }
  // Shallower paths first, so that assigning `foo` cannot replace what
  // `foo.bar` put there (torch.fx sorts the same way).
  auto depth = [](const std::string* t) { return std::count(t->begin(), t->end(), '.'); };
  std::stable_sort(targets.begin(), targets.end(),
                   [&](const std::string* a, const std::string* b) { return depth(a) < depth(b); });
  for (const std::string* target : targets) assign_attr(*target, root.at(*target));
  graph_->set_owning_module(this);
  recompile();
}

GraphModule::~GraphModule() {
  if (graph_) graph_->set_owning_module(nullptr);
}

void GraphModule::set_graph(std::unique_ptr<Graph> graph) {
  if (!graph) throw Error("GraphModule.set_graph: the graph is null");
  std::unique_ptr<Graph> old = std::exchange(graph_, std::move(graph));
  graph_->set_owning_module(this);
  try {
    recompile();
  } catch (...) {
    graph_->set_owning_module(nullptr);
    graph_ = std::move(old);
    recompile();  // the old graph compiled before: code and plan back as they were
    throw;
  }
  old->set_owning_module(nullptr);
}

// FX's _assign_attr: put `value` at `path`, creating containers on the way.
void GraphModule::assign_attr(const std::string& path, const Attr& value) {
  if (value.module()) {
    add_submodule(path, value.module());
    return;
  }
  if (!value.tensor().defined()) throw Error("GraphModule: the tensor given for '" + path + "' is undefined");
  auto [parent_path, name] = detail::split_path(path);
  torch::nn::Module* parent = this;
  if (!parent_path.empty()) {
    parent = get_submodule(parent_path);
    if (!parent) {
      add_submodule(parent_path, std::make_shared<Container>());
      parent = get_submodule(parent_path);
    }
  }
  if (auto existing = tensor_of(*parent, name)) {
    if (existing->is_same(value.tensor())) return;  // the module given for a shorter path has it already
    throw Error("GraphModule: '" + path + "' is given in the map, but the module at '" + parent_path +
                "' already has another tensor named '" + name + "'; give one of the two");
  }
  if (child_of(parent, name))
    throw Error("GraphModule: '" + path + "' is given as a tensor, but '" + path +
                "' is already a submodule");
  if (value.is_parameter())
    parent->register_parameter(name, value.tensor(), value.tensor().requires_grad());
  else
    parent->register_buffer(name, value.tensor());
}

// ---- deep copy -----------------------------------------------------------------

namespace {

// Python's copy.deepcopy with its memo: an object reached twice is copied
// once, so aliases (tied weights, a module at two paths) stay aliases.
class DeepCopier {
 public:
  explicit DeepCopier(const c10::optional<c10::Device>& device) : device_(device) {}

  // Own storage, same requires_grad (Tensor/Parameter.__deepcopy__).
  at::Tensor tensor(const at::Tensor& t) {
    if (!t.defined()) return t;
    auto [it, fresh] = tensors_.try_emplace(t.unsafeGetTensorImpl());
    if (fresh) {
      torch::NoGradGuard no_grad;
      at::Tensor copy = device_ ? t.detach().to(t.options().device(*device_), /*non_blocking=*/false,
                                                /*copy=*/true)
                                : t.detach().clone();
      it->second = copy.set_requires_grad(t.requires_grad());
    }
    return it->second;
  }

  // The parameters, buffers and tensor attributes of `from`, copied onto `to`.
  void copy_tensors(const torch::nn::Module& from, Module& to) {
    for (const auto& p : from.named_parameters(false))
      to.register_parameter(p.key(), tensor(p.value()), p.value().defined() && p.value().requires_grad());
    for (const auto& b : from.named_buffers(false)) to.register_buffer(b.key(), tensor(b.value()));
    if (const auto* fm = dynamic_cast<const Module*>(&from))
      for (const auto& [name, t] : fm->attributes()) to.register_attribute(name, tensor(t));
  }

  // A container made for dotted paths is rebuilt here; any other module
  // copies itself with clone().
  std::shared_ptr<torch::nn::Module> module(const std::shared_ptr<torch::nn::Module>& m,
                                            const std::string& path) {
    if (auto it = modules_.find(m.get()); it != modules_.end()) return it->second;
    std::shared_ptr<torch::nn::Module> copy;
    if (dynamic_cast<const Container*>(m.get())) {
      auto c = std::make_shared<Container>();
      c->train(m->is_training());  // before the children: only this flag
      copy_tensors(*m, *c);
      for (const auto& child : m->named_children())
        c->register_module(child.key(), module(child.value(), path + "." + child.key()));
      copy = c;
    } else {
      auto fail = [&](const std::string& why) {
        return Error("GraphModule.deepcopy: the submodule at '" + path + "' (" + detail::type_of(*m) +
                     ") cannot be copied: " + why +
                     " (its class needs a clone() override: construct a new instance with the same "
                     "configuration and call fx::Module::copy_state_from)");
      };
      try {
        copy = m->clone(device_);
      } catch (const c10::Error& e) {
        throw fail(e.what_without_backtrace());
      } catch (const std::exception& e) {
        throw fail(e.what());
      }
      if (!copy) throw fail("its clone() returned null");
    }
    modules_.emplace(m.get(), copy);
    return copy;
  }

 private:
  c10::optional<c10::Device> device_;
  std::unordered_map<const void*, at::Tensor> tensors_;  // TensorImpl* -> its copy
  std::unordered_map<const torch::nn::Module*, std::shared_ptr<torch::nn::Module>> modules_;
};

}  // namespace

// torch.fx's __deepcopy__: a stand-in root holding copies of everything,
// then a GraphModule made from it and a copy of the graph.
std::unique_ptr<GraphModule> GraphModule::copy_to(const c10::optional<c10::Device>& device) const {
  DeepCopier copier(device);
  Container root;
  root.train(is_training());  // the copy takes it from the root
  copier.copy_tensors(*this, root);
  for (const auto& child : named_children())
    root.register_module(child.key(), copier.module(child.value(), child.key()));
  auto graph = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> val_map;
  const Node* src_output = nullptr;
  Argument result = graph->graph_copy(*graph_, val_map, &src_output);
  if (src_output) graph->output(result, src_output->type());
  graph->set_pytree_info(graph_->pytree_info());  // as Graph.__deepcopy__ copies the codegen
  return std::make_unique<GraphModule>(root, std::move(graph), type_name());
}

std::unique_ptr<GraphModule> GraphModule::deepcopy() const { return copy_to(c10::nullopt); }

std::shared_ptr<torch::nn::Module> GraphModule::clone(const c10::optional<c10::Device>& device) const {
  return std::shared_ptr<GraphModule>(copy_to(device));
}

torch::nn::Module* GraphModule::get_submodule(std::string_view path) const {
  if (path.empty()) return const_cast<GraphModule*>(this);
  const auto* found = detail::find_submodule(*this, path);
  return found ? found->get() : nullptr;
}

torch::nn::Module* GraphModule::target_module(const Target& target) const {
  if (target.str().empty()) return nullptr;  // not a submodule: this module itself
  if (memo_)
    if (torch::nn::Module* const* known = memo_->by_target.find(target.entry())) return *known;
  torch::nn::Module* m = get_submodule(target.str());
  if (memo_ && m) memo_->remember(target, m);
  return m;
}

bool GraphModule::has_target_module(const Target& target) const { return target_module(target) != nullptr; }

Impurity GraphModule::module_impurity(const Target& target) const {
  const auto* m = dynamic_cast<const Module*>(target_module(target));
  return m ? m->impurity() : Impurity::none;
}

bool GraphModule::delete_submodule(const std::string& path) {
  auto [parent_path, name] = detail::split_path(path);
  torch::nn::Module* parent = get_submodule(parent_path);
  if (!parent || !detail::children_of(*parent).contains(name)) return false;
  parent->unregister_module(name);
  return true;
}

void GraphModule::delete_all_unused_submodules() {
  std::unordered_set<std::string> used;
  std::unordered_set<std::string_view> walked;  // call_module targets whose submodules are in `used`
  for (Node* n : graph_->nodes()) {
    if (n->op() != Op::call_module && n->op() != Op::get_attr) continue;
    const std::string& target = n->target().str();
    for (size_t dot = target.find('.'); dot != std::string::npos; dot = target.find('.', dot + 1))
      used.insert(target.substr(0, dot));
    used.insert(target);
    // A module called many times is walked once: its subtree can be as big as the model.
    if (n->op() == Op::call_module && walked.insert(target).second)
      if (torch::nn::Module* m = get_submodule(target))
        for (const auto& sub : m->named_modules("", /*include_self=*/false))
          used.insert(target + "." + sub.key());
  }
  std::vector<std::string> unused;
  for (const auto& m : named_modules("", /*include_self=*/false))
    if (!used.count(m.key())) unused.push_back(m.key());
  for (const auto& path : unused) delete_submodule(path);  // false for one inside a deleted parent
}

at::Tensor GraphModule::get_tensor(std::string_view path) const {
  auto [parent, name] = detail::split_path(path);
  torch::nn::Module* owner = get_submodule(parent);
  if (owner)
    if (auto t = tensor_of(*owner, name)) return *t;
  throw Error("GraphModule: no parameter, buffer or tensor attribute at '" + std::string(path) + "'");
}

bool GraphModule::has_submodule(std::string_view path) const { return get_submodule(path) != nullptr; }

bool GraphModule::has_attribute(std::string_view path) const {
  if (get_submodule(path)) return true;
  auto [parent, name] = detail::split_path(path);
  torch::nn::Module* owner = get_submodule(parent);
  return owner && tensor_of(*owner, name).has_value();
}

void GraphModule::add_submodule(const std::string& path, std::shared_ptr<torch::nn::Module> m) {
  if (!m) throw Error("GraphModule::add_submodule: the module for '" + path + "' is null");
  auto [parent_path, name] = detail::split_path(path);
  torch::nn::Module* parent = this;
  size_t start = 0;
  while (start < parent_path.size()) {  // create containers on the way
    size_t dot = parent_path.find('.', start);
    std::string atom = parent_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    torch::nn::Module* next = child_of(parent, atom);
    if (!next) next = parent->register_module(atom, std::make_shared<Container>()).get();
    parent = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (child_of(parent, name))
    parent->replace_module(name, m);
  else
    parent->register_module(name, m);
}

// The module at `path` in this GraphModule, made of empty containers where
// nothing is there yet.
torch::nn::Module* GraphModule::make_path(RootIndex& index, const std::string& path) {
  if (torch::nn::Module* m = index.find(path)) return m;
  auto [parent_path, name] = detail::split_path(path);
  torch::nn::Module* parent = make_path(index, parent_path);
  torch::nn::Module* made = parent->register_module(name, std::make_shared<Container>()).get();
  index.here[path] = made;
  index.owned.insert(made);
  return made;
}

// FX's _copy_attr: share the root's object at `path`, creating containers.
// Returns the module placed at `path`, or nullptr for a tensor.
torch::nn::Module* GraphModule::copy_attr(RootIndex& index, const std::string& path, bool is_module) {
  auto [parent_path, name] = detail::split_path(path);
  auto share_module = [&](std::shared_ptr<torch::nn::Module> m) -> torch::nn::Module* {
    torch::nn::Module* existing = index.find(path);
    if (existing == m.get()) return existing;
    torch::nn::Module* parent = make_path(index, parent_path);
    if (existing) {
      // A container made for a deeper target gives way to the module itself
      // (as FX's setattr does); what was indexed beneath it is stale.
      parent->replace_module(name, m);
      std::string prefix = path + ".";
      std::erase_if(index.here, [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
      std::erase_if(index.expanded, [&](const auto& p) { return p == path || p.rfind(prefix, 0) == 0; });
      if (memo_) memo_->by_target = {};  // and what was remembered beneath
    } else {
      parent->register_module(name, m);
    }
    index.here[path] = m.get();
    return m.get();
  };
  if (is_module) {
    auto m = path.empty() ? nullptr : index.root_module(path);
    if (!m)
      throw Error("GraphModule: call_module target '" + path + "' is not a submodule of the root " +
                  index.root.type_name());
    return share_module(std::move(m));
  }
  auto t = index.root_tensor(path);
  if (!t) {
    if (auto m = path.empty() ? nullptr : index.root_module(path)) {  // get_attr of a whole module
      return share_module(std::move(m));
    }
    throw Error("GraphModule: get_attr target '" + path +
                "' is not a parameter, buffer, tensor attribute or "
                "submodule of the root " +
                index.root.type_name());
  }
  torch::nn::Module* parent = make_path(index, parent_path);
  // A module shared with the root has the tensor already; ours get it once.
  if (!index.owned.count(parent) || !index.copied.insert(path).second) return nullptr;
  const auto& [tensor, kind] = *t;
  switch (kind) {
    case detail::TensorKind::parameter:
      parent->register_parameter(name, tensor, tensor.requires_grad());
      break;
    case detail::TensorKind::buffer:
      parent->register_buffer(name, tensor);
      break;
    case detail::TensorKind::attribute:
      if (auto* fm = dynamic_cast<Module*>(parent))
        fm->register_attribute(name, tensor);
      else
        throw Error("GraphModule: cannot store tensor attribute '" + path + "' on a non-fx module");
      break;
  }
  return nullptr;
}

void GraphModule::recompile() {
  MemoScope memo(*this);
  graph_->lint();
  const std::vector<Node*> order = graph_->nodes().to_vector();
  const auto dies_at = graph_->last_uses(order);  // to free values early
  code_ = graph_->python_code("self", order, dies_at).src;

  runtime::ExecutionPlan::Lookup lookup;
  lookup.attribute = [this](const Node& n) -> c10::IValue {
    // A whole submodule (cond's branches) is a value too.
    const std::string& path = n.target().str();
    auto* sub = has_submodule(path) ? dynamic_cast<Module*>(get_submodule(path)) : nullptr;
    if (sub) return runtime::module_ivalue(std::shared_ptr<Module>(sub->shared_from_this(), sub));
    return get_tensor(path);
  };
  lookup.module = [this](const Node& n) {
    torch::nn::Module* found = target_module(n.target());
    auto* fm = dynamic_cast<Module*>(found);
    if (!fm) throw Error("call_module target '" + n.target().str() + "' is not an fx::Module");
    // A submodule is held by a shared_ptr (its parent's dict): share that ownership.
    return std::shared_ptr<Module>(found->shared_from_this(), fm);
  };
  std::unique_ptr<runtime::ExecutionPlan> plan;
  try {
    plan = std::make_unique<runtime::ExecutionPlan>(*graph_, order, dies_at, lookup);
  } catch (const Error& e) {
    throw Error(std::string("GraphModule.recompile: ") + e.what());
  }
  set_forward_params(parameters_of(*graph_, plan->input_names(), plan->defaults()));
  plan_ = std::move(plan);
}

c10::IValue GraphModule::run(std::vector<c10::IValue> inputs) {
  return plan_->run(std::move(inputs), type_name());
}

Value GraphModule::forward(const std::vector<Value>& args) {
  if (const auto& info = graph_->pytree_info()) {
    // torch.fx's _PyTreeCodeGen: flatten the arguments, run, rebuild the output.
    // A traced module's orig_args start with `self`; a captured function's do not.
    const size_t first = !info->orig_args.empty() && info->orig_args[0] == "self" ? 1 : 0;
    std::vector<Value> flat;
    try {
      if (args.size() > info->in_spec.children.size())
        throw Error("takes " + std::to_string(info->in_spec.children.size()) + " argument(s) but " +
                    std::to_string(args.size()) + " were given");
      for (size_t i = 0; i < info->in_spec.children.size(); ++i) {
        const std::string& name = info->orig_args.at(first + i);
        if (i >= args.size()) throw Error("missing argument '" + name + "'");
        auto leaves = tree_flatten_spec(args[i], info->in_spec.children[i], name);
        flat.insert(flat.end(), leaves.begin(), leaves.end());
      }
    } catch (const Error& e) {
      throw Error(type_name() + ".forward: " + e.what());
    }
    Value out = run_flat(flat);
    if (!info->out_spec) return out;
    return tree_unflatten(out.items(), *info->out_spec);
  }
  return run_flat(args);
}

Value GraphModule::run_flat(const std::vector<Value>& args) {
  bool symbolic = false;
  for (const auto& a : args) symbolic = symbolic || a.has_proxy();
  if (symbolic) return Interpreter(*this).run(args);
  std::vector<c10::IValue> inputs;
  inputs.reserve(args.size());
  for (const auto& a : args) inputs.push_back(a.ivalue());
  return Value(run(std::move(inputs)));
}

std::string GraphModule::to_string() const {
  return repr() + "\n" + code_ + "\n# To see more debug info, please use `graph_module.print_readable()`";
}

std::unique_ptr<GraphModule> symbolic_trace(Module& root, const ConcreteArgs& concrete_args) {
  Tracer tracer;
  std::unique_ptr<Graph> graph = tracer.trace(root, concrete_args);
  size_t dot = root.type_name().rfind('.');
  std::string name = dot == std::string::npos ? root.type_name() : root.type_name().substr(dot + 1);
  return std::make_unique<GraphModule>(root, std::move(graph), name);
}

}  // namespace fx
