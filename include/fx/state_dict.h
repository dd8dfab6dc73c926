#pragma once
// State dicts interchanged with Python.
//
//   # Python                                   // C++
//   torch.save(model.state_dict(), "m.pt")     fx::load_state_dict(*model, "m.pt");
//   model.load_state_dict(torch.load("c.pt"))  fx::save_state_dict(*model, "c.pt");
//
// Keys are PyTorch's dotted names (`features.0.weight`, `bn.running_mean`):
// a module's parameters, then its buffers, then its children's, recursively,
// in registration order, as Module.state_dict() lists them. fx::nn modules
// register PyTorch's names, so a model written with them in the same structure
// as its Python original reads the original's checkpoint.
//
// Files are torch.save's zip format (the default since torch 1.6). torch.save
// pickles the state dict as an OrderedDict with a `_metadata` attribute, which
// LibTorch's unpickler cannot read (it turns every OrderedDict into None), so
// fxcpp reads the pickle itself: only what a state dict holds (dicts, tuples,
// lists, numbers, strings, tensors and their storages) and nothing executable.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

namespace fx {

using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// module.state_dict(): the module's own tensors (not copies), in PyTorch's order.
StateDict state_dict(const torch::nn::Module& module);

// torch.load(path) of a file holding a dict of tensors, keys in the file's
// order. Throws fx::Error naming the file when it is not a torch.save zip
// archive or holds anything other than str -> tensor.
StateDict read_state_dict(const std::string& path);

// module.load_state_dict(torch.load(path), strict): copies every tensor of the
// file into the module's parameter or buffer of that name. Nothing is copied
// unless all of them fit. Throws fx::Error naming the file and the keys:
// missing or unexpected keys (only when strict, as in PyTorch), a shape
// mismatch or a dtype mismatch (always).
void load_state_dict(torch::nn::Module& module, const std::string& path, bool strict = true);

// torch.save(module.state_dict(), path): a file Python's torch.load reads as a
// dict (Module.load_state_dict accepts it).
void save_state_dict(const torch::nn::Module& module, const std::string& path);

// Lists of tensors, as the inputs and outputs of `fxc run` are kept:
//   torch.save([x, y], "in.pt")  ->  fx::read_tensors("in.pt")
// A file holding one tensor gives a list of one. Throws fx::Error naming the
// file and the item that is not a tensor.
std::vector<at::Tensor> read_tensors(const std::string& path);
// torch.load reads the file as a list of tensors.
void save_tensors(const std::vector<at::Tensor>& tensors, const std::string& path);
// torch.load (weights_only, its default) reads the file as a list of these
// values: tensors, ints, floats, bools, None, strings, and tuples, lists and
// dicts of them (what a module returns). Throws fx::Error naming the
// position of a value of another kind.
void save_values(const std::vector<c10::IValue>& values, const std::string& path);

}  // namespace fx
