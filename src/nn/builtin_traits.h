#pragma once
// The records of fx::nn's own classes, one function per family and file
// (src/nn/<family>_traits.cpp), registered before any other.

#include <fx/nn/module_traits.h>

#include <string>
#include <vector>

#include "python_values.h"

namespace fx::nn {

std::vector<ModuleTraits> container_traits();
std::vector<ModuleTraits> activation_traits();
std::vector<ModuleTraits> attention_traits();
std::vector<ModuleTraits> conv_traits();
std::vector<ModuleTraits> dropout_traits();
std::vector<ModuleTraits> embedding_traits();
std::vector<ModuleTraits> linear_traits();
std::vector<ModuleTraits> normalization_traits();
std::vector<ModuleTraits> pooling_traits();
std::vector<ModuleTraits> rnn_traits();
std::vector<ModuleTraits> shape_traits();
std::vector<ModuleTraits> transformer_traits();

using TraitsFamily = std::vector<ModuleTraits> (*)();
inline std::vector<TraitsFamily> builtin_traits() {
  return {container_traits, activation_traits, attention_traits, conv_traits,
          dropout_traits,   embedding_traits,  linear_traits,    normalization_traits,
          pooling_traits,   rnn_traits,        shape_traits,     transformer_traits};
}

// torch.typename of a class defined in torch/nn/modules/<file>.py.
inline std::string torch_modules(const char* file, const std::string& type) {
  return "torch.nn.modules." + std::string(file) + "." + type.substr(type.rfind('.') + 1);
}

// "x_" for an in-place ATen function when `inplace`.
inline std::string in_place(bool inplace, const std::string& fn) { return inplace ? fn + "_" : fn; }

// A tensor call.
inline CppCall cpp_tensor(std::string expr) { return CppCall{std::move(expr), 0}; }

using detail::py_int;

}  // namespace fx::nn
