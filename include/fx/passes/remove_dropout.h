#pragma once
// Removing dropout layers for inference: torch.fx's
// torch.fx.experimental.optimization.remove_dropout. Every call_module node
// of a torch.nn.Dropout (exactly that class and its subclasses: in PyTorch,
// Dropout2d/3d are not Dropouts and stay, as here) is replaced by its input.
//
//   std::unique_ptr<fx::GraphModule> gm = fx::passes::remove_dropout(*model);  // as torch.fx
//   bool changed = fx::passes::remove_dropout(*gm);                            // or in place
//
// Throws fx::Error naming the node when a Dropout is called with other than
// one argument (torch.fx asserts len(args) == 1).

#include <fx/graph_module.h>
#include <fx/module.h>

#include <memory>

namespace fx::passes {

// torch.fx's remove_dropout(model): symbolic_trace(model) rewritten by a
// Transformer that turns each Dropout call into its input.
std::unique_ptr<GraphModule> remove_dropout(Module& model);
// The same on gm's graph in place (nodes keep their names), then
// gm.recompile(). Returns whether anything was removed.
bool remove_dropout(GraphModule& gm);

}  // namespace fx::passes
