#pragma once
// GraphModule files: a whole GraphModule in one file, read and written by
// fxcpp and by Python's torch.fx (python/fxcpp). docs/format.md specifies it.
//
//   fx::save(*gm, "resnet18.fxg");          # python3 -m fxcpp import resnet18.fxg
//   auto gm = fx::load("resnet18.fxg");     # python3 -m fxcpp export ... -o resnet18.fxg
//
// The file is a torch.save zip archive: Python's torch.load(path) reads its
// tensors (a dict from dotted path to tensor); its `graph.json` record holds
// the graph, the module tree (leaf modules as torch.nn class name and
// constructor arguments) and the node meta that has a file form
// (tensor_meta, strings, numbers).

#include <fx/error.h>
#include <fx/graph_module.h>

#include <memory>
#include <string>
#include <string_view>

namespace fx {

// Throws fx::Error naming the submodule or node that has no file form (a
// module that is neither an fx::nn module nor a container, an opaque
// constant argument), or the path when it cannot be written.
void save(const GraphModule& gm, const std::string& path);
std::string save_to_bytes(const GraphModule& gm);

// Loads and validates fully: the archive, the JSON (its structure and every
// value's kind), the graph (lint), every module's constructor arguments,
// every tensor (declared, present, and of the shape and dtype its module
// has), every target (resolved, as recompile() does). Anything wrong throws
// fx::LoadError naming the file and the position (`graph.nodes[3] ('add_1')
// .args[0]`, `modules[2] ('layer1.0.conv1')`, `tensors[5] ('fc.bias')`).
std::unique_ptr<GraphModule> load(const std::string& path);
// The same, from the bytes of a file; `name` stands for the file in messages.
std::unique_ptr<GraphModule> load_from_bytes(std::string_view bytes, const std::string& name = "<bytes>");

}  // namespace fx
