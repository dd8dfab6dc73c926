#pragma once
// Conv/BatchNorm folding for inference: torch.fx's
// torch.fx.experimental.optimization.fuse. A BatchNorm in eval mode is an
// affine map per channel, so a Conv followed by it is one Conv with scaled
// weights and a shifted bias (torch.nn.utils.fusion.fuse_conv_bn_eval):
//
//   model->eval();
//   std::unique_ptr<fx::GraphModule> fused = fx::passes::fuse(*model);  // as torch.fx's fuse(model)
//   bool changed = fx::passes::fuse(*gm);                                // or in place on a GraphModule
//
// Patterns, as torch.fx 2.14 (exact module types, `type(m) is ...`):
// Conv1d+BatchNorm1d, Conv2d+BatchNorm2d, Conv3d+BatchNorm3d and
// Linear+BatchNorm1d (torch.nn.utils.fusion.fuse_linear_bn_eval; 1.13's fuse
// had only the Conv pairs). A pair is fused when the conv's output has no other
// user and the BatchNorm tracks running stats; the conv's module is replaced
// by a new fx::nn module with the folded weights and the BatchNorm node is
// erased. The original modules are never modified.
//
// Throws fx::Error, naming the nodes, when a pair to fuse is in training
// mode (torch.fx asserts "Fusion only for eval!"): call eval() first.

#include <fx/graph_module.h>
#include <fx/module.h>

#include <memory>

namespace fx::passes {

// torch.fx's fuse(model): symbolic_trace(model), fused, as a new
// GraphModule holding only the modules its graph uses. `model` is left as
// it was (torch.fx's inplace=False; fxcpp never writes the model).
std::unique_ptr<GraphModule> fuse(Module& model);
// Fuses gm's graph in place: the fused module replaces the conv's in gm (the
// BatchNorm module stays in gm's tree, unused), then gm.recompile().
// Returns whether anything was fused.
bool fuse(GraphModule& gm);

}  // namespace fx::passes
