#pragma once
// A torch::nn::Module's own dicts of children, parameters and buffers, read
// in place. Its public named_children() / named_parameters(false) /
// named_buffers(false) return copies, which made every lookup by name O(size):
// a GraphModule with n submodules answering lint's n questions was O(n^2).

#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fx::detail {

const torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>>& children_of(
    const torch::nn::Module& m);
const torch::OrderedDict<std::string, at::Tensor>& parameters_of(const torch::nn::Module& m);
const torch::OrderedDict<std::string, at::Tensor>& buffers_of(const torch::nn::Module& m);
// The descendant of m at dotted `path`, walked child by child as Python's
// getattr chain does; nullptr when there is none or path is empty.
const std::shared_ptr<torch::nn::Module>* find_submodule(const torch::nn::Module& m, std::string_view path);

// Whether `name` is one of m's own parameters, buffers or children, undefined
// entries included (torch.nn's `bias = None`): a name an attribute may not take.
bool has_member(const torch::nn::Module& m, const std::string& name);

enum class TensorKind { parameter, buffer, attribute };
// m's own parameter, buffer or tensor attribute (fx::Module::attribute)
// `name`, and which it is. Undefined entries count as absent, as
// named_parameters() has them.
std::optional<std::pair<at::Tensor, TensorKind>> tensor_entry(const torch::nn::Module& m,
                                                              const std::string& name);

// The Python class name of m: an fx::Module's type_name(), else m.name().
std::string type_of(const torch::nn::Module& m);
// torch.nn.Module, Sequential, ModuleList, ModuleDict: the types whose
// children are listed one by one (files, to_folder); any other module is
// built whole by its constructor.
bool is_container_type(std::string_view type);
// The parent path and last atom of a dotted path ("" and path without a dot).
std::pair<std::string, std::string> split_path(std::string_view path);

}  // namespace fx::detail
