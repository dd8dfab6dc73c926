// Values computed from the weights alone, computed once and kept while the
// weights stay as they are: a convolution's weight copied to channels_last,
// a batch norm's scale `weight * rsqrt(running_var + eps)`. Inductor's
// freezing folds such values into constants, and its result is wrong once
// a weight changes; here each is a submodule of the compiled graph that
// remembers what it read, and computes again when a weight was changed in
// place (its version), replaced, or laid out otherwise. In a training step,
// where the optimizer changes every weight between calls, each call
// computes them again, as before.
//
// Which nodes: pure call_function nodes that read only tensor get_attr nodes
// (weights no node of the graph writes) and other such nodes, read by no
// impure node and not returned (a caller could write into a returned
// tensor, and the next call would read it). Of those, each one read by a
// node outside the set or by two or more nodes is a root: it and the nodes
// only it reads are one tree, so every node is in one tree (linear). A tree
// of views and getitems alone costs nothing to compute and stays as it is.
#include "phases.h"

#include <fx/error.h>
#include <fx/module.h>

#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/SmallVector.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fx::compile_detail {

namespace {

// What a call reads, enough to know that the next call reads the same
// values: the same storage (held, so its address is not reused), the same
// view of it, and the same version (a write through any view of the
// storage bumps it; a view made again on each call shares it). A write
// through `.data`, which autograd does not see either, is not seen.
struct Seen {
  c10::IValue value;  // a scalar read as it is; a tensor held
  c10::StorageImpl* storage = nullptr;
  const void* data = nullptr;
  int64_t offset = 0, version = 0;
  c10::SmallVector<int64_t, 5> sizes, strides;
  c10::ScalarType dtype = c10::kFloat;

  bool same(const at::Tensor& t) const {
    return storage == t.storage().unsafeGetStorageImpl() && data == t.storage().data() &&
           offset == t.storage_offset() && dtype == t.scalar_type() && version == t._version() &&
           t.sizes().equals(sizes) && t.strides().equals(strides);
  }
};

// Appends what `v` is made of to `seen`; false when it is something a cache
// cannot vouch for (an inference tensor has no version; a tensor without
// storage).
bool record(const c10::IValue& v, std::vector<Seen>& seen) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined() || t.is_inference() || !t.has_storage()) return false;
    Seen s;
    s.value = v;
    s.storage = t.storage().unsafeGetStorageImpl();
    s.data = t.storage().data();
    s.offset = t.storage_offset();
    s.version = t._version();
    s.sizes.assign(t.sizes().begin(), t.sizes().end());
    s.strides.assign(t.strides().begin(), t.strides().end());
    s.dtype = t.scalar_type();
    seen.push_back(std::move(s));
    return true;
  }
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements())
      if (!record(e, seen)) return false;
    return true;
  }
  if (v.isInt() || v.isDouble() || v.isBool() || v.isNone()) {
    Seen s;
    s.value = v;
    seen.push_back(std::move(s));
    return true;
  }
  return false;
}

// Whether `v` is what `seen[at...]` recorded; advances `at`.
bool matches(const c10::IValue& v, const std::vector<Seen>& seen, size_t& at) {
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements())
      if (!matches(e, seen, at)) return false;
    return true;
  }
  if (at == seen.size()) return false;
  const Seen& s = seen[at++];
  if (v.isTensor()) return s.value.isTensor() && s.same(v.toTensor());
  if (v.isInt()) return s.value.isInt() && s.value.toInt() == v.toInt();
  if (v.isDouble()) return s.value.isDouble() && s.value.toDouble() == v.toDouble();
  if (v.isBool()) return s.value.isBool() && s.value.toBool() == v.toBool();
  return v.isNone() && s.value.isNone();
}

// Whether a result may be kept: nothing autograd would need to see.
bool keepable(const c10::IValue& v) {
  if (v.isTensor()) return !v.toTensor().requires_grad();
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements())
      if (!keepable(e)) return false;
    return true;
  }
  return !v.isTensorList() && !v.isList() && !v.isGenericDict();
}

// The submodule a tree becomes: runs the tree's graph, or returns what it
// returned last when its inputs are the same. Calls from several threads
// share it; two that miss at once both compute, and the last one's result
// is kept (either is right).
class WeightCache : public Module {
 public:
  WeightCache(std::shared_ptr<GraphModule> tree, std::vector<Param> inputs)
      : Module("fxcpp.WeightCache", std::move(inputs)), tree_(std::move(tree)) {}

  Value forward(const std::vector<Value>& args) override {
    std::vector<c10::IValue> in;
    in.reserve(args.size());
    for (const Value& a : args) in.push_back(a.ivalue());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (result_) {
        size_t at = 0;
        bool hit = true;
        for (const c10::IValue& v : in) hit = hit && matches(v, seen_, at);
        if (hit && at == seen_.size()) return Value(*result_);
      }
    }
    bool cacheable = true;
    std::vector<Seen> seen;
    for (const c10::IValue& v : in) {
      cacheable = cacheable && record(v, seen);
      if (cacheable && at::GradMode::is_enabled() && v.isTensor() && v.toTensor().requires_grad())
        cacheable = false;
    }
    c10::IValue result;
    if (cacheable) {
      // A kept value is an ordinary tensor, with a version counter, even
      // when the call that makes it runs under inference mode (where it
      // would be an inference tensor), so that calls outside it use it too.
      c10::InferenceMode ordinary(false);
      at::NoGradGuard no_grad;
      result = tree_->run(std::move(in));
    } else {
      result = tree_->run(std::move(in));
    }
    if (cacheable && keepable(result)) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_ = std::move(seen);
      result_ = result;
    }
    return Value(std::move(result));
  }

  const GraphModule& tree() const { return *tree_; }

  // A copy (GraphModule::deepcopy, .to(device)) shares the tree, which
  // holds no tensor, and keeps nothing yet.
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<c10::Device>& = c10::nullopt) const override {
    return std::make_shared<WeightCache>(tree_, forward_params());
  }

 private:
  std::shared_ptr<GraphModule> tree_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::optional<c10::IValue> result_;
};

}  // namespace

size_t cache_weight_computations(GraphModule& gm) {
  Graph& graph = gm.graph();
  const Node* output = graph.output_node();
  // Weights: tensor attributes that no node writes. Cacheable: see above.
  std::unordered_set<const Node*> weights, cacheable;
  auto written = [](const Node& n) {
    for (const Node* user : n.users())
      if (user->is_impure()) return true;
    return false;
  };
  for (Node* n : graph.nodes()) {
    if (n->op() == Op::get_attr) {
      if (tensor_meta(*n) && !written(*n)) weights.insert(n);
      continue;
    }
    if (n->op() != Op::call_function || n->is_impure() || n->num_users() == 0 || written(*n) ||
        n->target().str().rfind("torch.ops.higher_order.", 0) == 0)
      continue;
    bool returned = false;
    for (const Node* user : n->users()) returned = returned || user == output;
    const std::vector<Node*> inputs = n->all_input_nodes();
    bool from_weights = !inputs.empty() && !returned;
    for (const Node* in : inputs) from_weights = from_weights && (weights.count(in) || cacheable.count(in));
    if (from_weights) cacheable.insert(n);
  }
  auto is_root = [&](const Node* n) {
    if (n->num_users() > 1) return true;
    for (const Node* user : n->users())
      if (!cacheable.count(user)) return true;
    return false;
  };

  std::unordered_map<const Node*, Node*> cached;  // a root -> its submodule's node
  std::vector<Node*> roots;
  for (Node* n : graph.nodes())
    if (cacheable.count(n) && is_root(n)) roots.push_back(n);
  size_t made = 0;
  for (Node* root : roots) {
    // The tree in post-order (inputs first) and its leaves: weights and
    // other roots, each read as a placeholder.
    std::vector<Node*> tree, leaves;
    std::unordered_set<const Node*> leaf_set;
    struct Frame {
      Node* node;
      std::vector<Node*> inputs;
      size_t next = 0;
    };
    std::vector<Frame> stack{{root, root->all_input_nodes()}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.inputs.size()) {
        Node* in = f.inputs[f.next++];
        if (cacheable.count(in) && !is_root(in)) {
          stack.push_back({in, in->all_input_nodes()});  // f dangles from here on
        } else if (leaf_set.insert(in).second) {
          leaves.push_back(in);
        }
        continue;
      }
      tree.push_back(f.node);
      stack.pop_back();
    }
    bool computes = false;
    for (const Node* n : tree)
      computes = computes || !(is_view(*n) || n->target().str() == "operator.getitem");
    if (!computes) continue;

    auto sub = std::make_unique<Graph>();
    std::unordered_map<const Node*, Node*> map;
    std::vector<Module::Param> params;
    for (Node* leaf : leaves) {
      map[leaf] = sub->placeholder(leaf->name());
      params.emplace_back(leaf->name());
    }
    for (Node* n : tree) map[n] = sub->node_copy(*n, [&](Node* x) -> Argument { return map.at(x); });
    sub->output(map.at(root));
    const std::string path = "cached_" + root->name();
    auto module =
        std::make_shared<WeightCache>(std::make_shared<GraphModule>(gm, std::move(sub)), std::move(params));
    gm.add_submodule(path, module);
    Args args;
    for (Node* leaf : leaves) {
      auto it = cached.find(leaf);
      args.push_back(it == cached.end() ? leaf : it->second);
    }
    Node* call;
    {
      auto at = graph.inserting_before(root);
      call = graph.call_module(path, std::move(args));
    }
    call->meta() = root->meta();
    root->replace_all_uses_with(call);
    // A kernel must not write its output into a kept value (memory_plan's
    // reuse_input, which a node made fresh on every call allowed).
    for (Node* user : call->users()) {
      Kwargs kwargs = user->kwargs();
      std::erase_if(kwargs, [&](const auto& kv) {
        return kv.first == "reuse_input" && kv.second.template is<int64_t>() &&
               user->args().at(static_cast<size_t>(kv.second.template get<int64_t>())).node() == call;
      });
      if (kwargs.size() != user->kwargs().size()) user->set_kwargs(std::move(kwargs));
    }
    cached[root] = call;
    // The tree's nodes are read by nothing now (each inner node by its one
    // user in the tree), last first.
    for (auto it = tree.rbegin(); it != tree.rend(); ++it)
      if ((*it)->num_users() == 0) graph.erase_node(*it);
    ++made;
  }
  return made;
}

std::unique_ptr<GraphModule> inline_weight_caches(GraphModule& gm) {
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> map;
  auto mapped = [&](Node* x) -> Argument { return map.at(x); };
  for (Node* n : gm.graph().nodes()) {
    const auto* cache = n->op() == Op::call_module
                            ? dynamic_cast<const WeightCache*>(gm.get_submodule(n->target().str()))
                            : nullptr;
    if (!cache) {
      map[n] = g->node_copy(*n, mapped);
      continue;
    }
    std::unordered_map<const Node*, Node*> tree_map;
    size_t i = 0;
    for (Node* p : cache->tree().graph().nodes())
      if (p->op() == Op::placeholder) tree_map[p] = map.at(n->args().at(i++).node());
    const Argument result = g->graph_copy(cache->tree().graph(), tree_map);
    if (!result.is_node())
      throw Error("fx::compile: the cached computation '" + n->name() + "' returns no node");
    map[n] = result.node();
  }
  g->set_pytree_info(gm.graph().pytree_info());
  return std::make_unique<GraphModule>(gm, std::move(g), "CompiledGraphModule");
}

}  // namespace fx::compile_detail
