#pragma once
// fx::to_folder: torch.fx's GraphModule.to_folder — a GraphModule written out
// as a Python package that plain PyTorch imports, with no fxcpp behind it.
//
//   fx::to_folder(*gm, "/tmp/resnet", "ResNet");
//
//   # Python
//   import sys; sys.path.insert(0, "/tmp")
//   from resnet import ResNet
//   model = ResNet().eval()          # loads /tmp/resnet/state_dict.pt
//   y = model(torch.randn(1, 3, 64, 64))
//
// It writes, as torch.fx 2.14 does:
//   dir/state_dict.pt  torch.save(gm.state_dict()) (tensor attributes count
//                      as buffers, as torch.fx registers them);
//   dir/module.py      `class <module_name>(torch.nn.Module)`: __init__ builds
//                      the submodules, declares the top-level parameters and
//                      buffers and loads state_dict.pt; then gm.code();
//   dir/__init__.py    `from .module import *`.
//
// Where torch.fx pickles a submodule that is not one of its "safe reprs"
// (Linear, ConvNd, BatchNormNd) to `<name>.pt`, fxcpp writes its PyTorch
// constructor instead — every fx::nn leaf prints PyTorch's repr — and builds
// containers (the empty modules of dotted paths, Sequential, ModuleList,
// ModuleDict) with add_module. module.py is therefore byte-identical to
// torch.fx's for a module whose children are all safe reprs, and differs
// only in the lines of the other children otherwise. docs/export.md.

#include <fx/graph_module.h>

#include <string>

namespace fx {

// Throws fx::Error when `dir` cannot be created (its parent must exist, as
// Path.mkdir(exist_ok=True) requires) or written, when `module_name` is not
// a Python identifier, and, naming its path, for a submodule with no
// PyTorch equivalent (a custom leaf module). Nothing is written in the last
// two cases.
void to_folder(const GraphModule& gm, const std::string& dir, const std::string& module_name = "FxModule");

}  // namespace fx
