#pragma once
// How to construct a module, as both fxcpp and torch.nn can read it.
//
// A leaf module of a saved GraphModule is kept as torch.nn's class name and
// its constructor arguments, every one by keyword, so that Python rebuilds it
// with `cls(**kwargs)` and C++ with fx::make_module. The tensors travel
// separately, in the state dict. python/fxcpp/modules.py is the Python half
// (describe / construct); the two must agree on every name and value kind.

#include <fx/argument.h>

#include <memory>
#include <string>

namespace torch::nn {
class Module;
}

namespace fx {

// torch.nn's public class name ("torch.nn.Conv2d"; "torch.nn.Module" for a
// plain container) and every constructor argument by keyword, named and
// ordered as in PyTorch's __init__ (device and dtype aside). Values are None,
// bool, int (int64_t), float (double), str, or a Tuple of those: conv sizes
// are tuples, as PyTorch stores them.
struct ModuleSpec {
  std::string type;
  Kwargs kwargs;
  bool operator==(const ModuleSpec&) const = default;
};

// The spec of an fx::nn module or container. Containers (torch.nn.Module,
// Sequential, ModuleList, ModuleDict) have no kwargs: their children are
// described separately by the caller. Throws fx::Error naming the module's
// type for anything else (a model's own fx::Module subclass, a plain
// torch::nn module).
ModuleSpec module_spec(const torch::nn::Module& m);

// Constructs the module of `spec` with fresh (randomly initialised)
// parameters, as PyTorch's `cls(**kwargs)`; missing kwargs take PyTorch's
// defaults. Throws fx::Error naming the type and the argument for an unknown
// type, an unknown or missing keyword, or a value of the wrong kind.
std::shared_ptr<torch::nn::Module> make_module(const ModuleSpec& spec);

}  // namespace fx
