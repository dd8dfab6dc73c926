#pragma once
// fx::export_cpp: a GraphModule written out as a standalone LibTorch C++
// project — readable code, no fxcpp, no Python behind it.
//
//   fx::export_cpp(*gm, "/tmp/resnet_cpp", {.class_name = "ResNet18"});
//
//   $ cmake -S /tmp/resnet_cpp -B /tmp/resnet_cpp/build && cmake --build /tmp/resnet_cpp/build
//   $ /tmp/resnet_cpp/build/fx_model weights.pt input.pt output.pt
//
// The folder holds:
//   model.h       the class: a constructor reading weights.pt, forward, and
//                 one at::Tensor member per parameter/buffer the graph uses
//                 (`layer1_0_conv1_weight` for `layer1.0.conv1.weight`);
//   forward.cpp   forward: one statement per node, variables named after the
//                 nodes, plain ATen calls —
//                   at::Tensor relu = at::relu_(bn1);
//                   at::Tensor add = (layer1_0_bn2 + maxpool);
//                   at::Tensor flatten = at::flatten(avgpool, 1);
//                 leaf modules in their functional form with their
//                 parameters (Linear -> at::linear(x, self.fc_weight,
//                 self.fc_bias), Conv2d -> at::conv2d, BatchNorm2d ->
//                 at::batch_norm, ...), torch.* / Tensor methods as the ATen
//                 overload their arguments fit;
//   model.cpp     the constructor;
//   main.cpp      `fx_model <weights.pt> <input.pt> <output.pt>`: reads the
//                 input (a tensor, or a tuple/list with one per input, as
//                 torch.save or torch::pickle_save write it), runs forward
//                 without autograd, writes the output the same way;
//   weights.pt    the tensors, a dict name -> tensor (torch::pickle_save;
//                 Python's torch.load reads it too);
//   CMakeLists.txt  find_package(Torch REQUIRED), target `fx_model`.
//
// Every node gets a static C++ type from what produced it; the graph's
// inputs are tensors (or numbers, for placeholders with a number default).
// Training-mode modules (Dropout, BatchNorm) are written in the mode the
// module is in when exported. docs/export.md lists what is translated.

#include <fx/graph_module.h>

#include <string>

namespace fx {

struct CppExportOptions {
  // The generated class (a C++ identifier).
  std::string class_name = "FxModule";
};

// Throws fx::Error naming the node and its target for anything with no C++
// spelling (before writing anything), for a class name that is no C++
// identifier, and when `dir` cannot be created or written (its parent must
// exist).
void export_cpp(const GraphModule& gm, const std::string& dir, const CppExportOptions& options = {});

}  // namespace fx
