#pragma once
// What FxGraphDrawer shows of a call_module's module: torch.typename(module)
// and the class's __constants__ with str() of each value.

#include <torch/nn/module.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fx::passes::detail {

// torch.typename(module): `torch.nn.modules.conv.Conv2d` for fx::nn's
// modules; other modules' class names as fxcpp knows them.
std::string module_typename(const torch::nn::Module& m);

// (name, str(value)) for each of the module class's __constants__, in
// PyTorch's order; nullopt for a class without __constants__ (Identity,
// Sigmoid, containers, user modules).
std::optional<std::vector<std::pair<std::string, std::string>>> module_constants(const torch::nn::Module& m);

}  // namespace fx::passes::detail
