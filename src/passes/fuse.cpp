#include <fx/passes/fuse.h>

#include <fx/error.h>
#include <fx/nn/conv.h>
#include <fx/nn/linear.h>
#include <fx/nn/normalization.h>

#include <torch/torch.h>

#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "../ir/repr.h"
#include "copy_graph.h"

namespace fx::passes {

namespace {

struct Pattern {
  std::type_index first, bn;
};

// torch.fx 2.14's patterns, in its order (1.13's fuse had only the three Conv pairs).
const Pattern kPatterns[] = {
    {typeid(nn::Conv1d), typeid(nn::BatchNorm1d)},
    {typeid(nn::Conv2d), typeid(nn::BatchNorm2d)},
    {typeid(nn::Conv3d), typeid(nn::BatchNorm3d)},
    {typeid(nn::Linear), typeid(nn::BatchNorm1d)},
};

// torch.fx's `modules = dict(named_modules())`: each call_module target
// looked up once, by interned target (no per-node path walk).
using ModuleCache = std::unordered_map<Target, torch::nn::Module*>;

// The module a call_module node calls, when the node is one of exactly `type`.
torch::nn::Module* module_of(const GraphModule& gm, ModuleCache& cache, const Argument& a,
                             std::type_index type) {
  Node* n = a.node();
  if (!n || n->op() != Op::call_module) return nullptr;
  auto [it, inserted] = cache.try_emplace(n->target(), nullptr);
  if (inserted) it->second = gm.get_submodule(n->target().str());
  torch::nn::Module* m = it->second;
  return m && std::type_index(typeid(*m)) == type ? m : nullptr;
}

// torch.nn.utils.fusion.fuse_conv_bn_weights / fuse_linear_bn_weights: the
// per-channel scale bn_w / sqrt(var + eps) goes into the weight's output
// channels, the shift into the bias.
void fold(at::Tensor& weight, at::Tensor& bias, const nn::NormBase& bn) {
  torch::NoGradGuard no_grad;
  const at::Tensor& rm = bn.running_mean;
  at::Tensor bn_w = bn.weight.defined() ? bn.weight : torch::ones_like(rm);
  at::Tensor bn_b = bn.bias.defined() ? bn.bias : torch::zeros_like(rm);
  at::Tensor conv_b = bias.defined() ? bias : torch::zeros_like(rm);
  at::Tensor scale = bn_w * torch::rsqrt(bn.running_var + bn.eps);
  std::vector<int64_t> shape(weight.dim(), 1);
  shape[0] = -1;
  at::Tensor new_w = weight * scale.reshape(shape);
  at::Tensor new_b = (conv_b - rm) * scale + bn_b;
  weight.set_data(new_w);
  if (bias.defined())
    bias.set_data(new_b);
  else
    bias = new_b;  // the caller registers it
}

// fuse_conv_bn_eval / fuse_linear_bn_eval: a copy of the conv (or linear)
// with the BatchNorm folded in.
std::shared_ptr<torch::nn::Module> fused_module(torch::nn::Module& first, const nn::NormBase& bn) {
  std::shared_ptr<torch::nn::Module> copy = first.clone();
  at::Tensor *weight, *bias;
  if (auto* conv = dynamic_cast<nn::ConvNd*>(copy.get())) {
    weight = &conv->weight;
    bias = &conv->bias;
  } else {
    auto* linear = dynamic_cast<nn::Linear*>(copy.get());
    weight = &linear->weight;
    bias = &linear->bias;
  }
  bool had_bias = bias->defined();
  fold(*weight, *bias, bn);
  if (!had_bias) *bias = copy->register_parameter("bias", bias->detach(), weight->requires_grad());
  return copy;
}

using fx::detail::quoted;

}  // namespace

bool fuse(GraphModule& gm) {
  Graph& graph = gm.graph();
  ModuleCache modules;
  bool changed = false;
  for (const Pattern& p : kPatterns) {
    for (Node* node : graph.nodes()) {
      // torch.fx's matches_module_pattern: (node.args[0], node) are call_modules of the two types.
      if (node->args().empty()) continue;
      auto* bn_module = module_of(gm, modules, Argument(node), p.bn);
      torch::nn::Module* first = bn_module ? module_of(gm, modules, node->args()[0], p.first) : nullptr;
      if (!first) continue;
      Node* first_node = node->args()[0].node();
      if (first_node->num_users() > 1) continue;  // the conv's output is used elsewhere
      auto& bn = static_cast<nn::NormBase&>(*bn_module);
      if (!bn.track_running_stats) continue;
      if (first->is_training() || bn.is_training())
        throw Error("fuse: " + quoted(first_node) + " (" + first_node->target().str() + ") and " +
                    quoted(node) + " (" + node->target().str() +
                    ") are in training mode; Conv/BatchNorm fusion is for eval only: call eval() on the "
                    "module first");
      std::shared_ptr<torch::nn::Module> fused;
      try {
        fused = fused_module(*first, bn);
      } catch (const c10::Error& e) {
        throw Error("fuse: cannot fold " + quoted(node) + " (" + node->target().str() + ") into " +
                    quoted(first_node) + " (" + first_node->target().str() + "): " +
                    e.what_without_backtrace() + "; the BatchNorm's num_features must match the outputs");
      }
      gm.add_submodule(first_node->target().str(), fused);
      modules[first_node->target()] = fused.get();  // torch.fx's replace_node_module updates `modules` too
      node->replace_all_uses_with(first_node);
      graph.erase_node(node);
      changed = true;
    }
  }
  if (changed) gm.recompile();
  return changed;
}

std::unique_ptr<GraphModule> fuse(Module& model) {
  std::unique_ptr<GraphModule> traced = symbolic_trace(model);
  auto work = std::make_unique<GraphModule>(*traced, detail::copy_graph(traced->graph()));
  fuse(*work);
  // torch.fx: GraphModule(fx_model, new_graph) keeps only the modules the graph uses.
  return std::make_unique<GraphModule>(*work, detail::copy_graph(work->graph()));
}

}  // namespace fx::passes
