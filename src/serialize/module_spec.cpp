// fx::module_spec and fx::make_module: binding keyword arguments to a
// constructor's parameters, as the module's traits record them
// (fx/nn/module_traits.h).
#include <fx/error.h>
#include <fx/module_spec.h>
#include <fx/nn/module_traits.h>

#include <torch/nn/module.h>

#include <algorithm>

namespace fx {

namespace {

// The C++ class of `m`, for a message about a module fxcpp cannot describe.
std::string spec_module_name(const torch::nn::Module& m) {
  if (const auto* fm = dynamic_cast<const Module*>(&m)) return fm->type_name();
  return m.name() + " (a torch::nn module)";
}

}  // namespace

ModuleSpec module_spec(const torch::nn::Module& m) {
  const auto* fm = dynamic_cast<const Module*>(&m);
  const nn::ModuleTraits* t = fm ? nn::find_module_traits(fm->type_name()) : nullptr;
  if (!t)
    throw Error("module_spec: " + spec_module_name(m) +
                " is not a torch.nn module that fxcpp knows how to construct; build the model from "
                "fx::nn modules and containers, or let the tracer go through it (is_leaf_module false) "
                "so that its own operations become graph nodes");
  Args values = t->describe(*fm);
  if (values.size() != t->params.size())
    throw Error("module_spec: " + t->type + ": its traits read " + std::to_string(values.size()) +
                " arguments for " + std::to_string(t->params.size()) + " parameters");
  ModuleSpec spec{t->type, {}};
  for (size_t i = 0; i < values.size(); ++i)
    spec.kwargs.emplace_back(t->params[i].name, std::move(values[i]));
  return spec;
}

std::shared_ptr<torch::nn::Module> make_module(const ModuleSpec& spec) {
  const nn::ModuleTraits* t = nn::find_module_traits(spec.type);
  if (!t)
    throw Error("make_module: unknown module type '" + spec.type +
                "'; fxcpp constructs the torch.nn modules of fx::nn (include/fx/nn/), the containers "
                "torch.nn.Module, Sequential, ModuleList and ModuleDict, and the modules registered with "
                "fx::nn::register_module_traits");
  for (size_t i = 0; i < spec.kwargs.size(); ++i) {
    const std::string& name = spec.kwargs[i].first;
    auto known =
        std::find_if(t->params.begin(), t->params.end(), [&](const auto& p) { return p.name == name; });
    if (known == t->params.end()) throw Error(spec.type + ": unexpected keyword argument '" + name + "'");
    for (size_t j = 0; j < i; ++j)
      if (spec.kwargs[j].first == name)
        throw Error(spec.type + ": got multiple values for argument '" + name + "'");
  }
  Kwargs bound;
  for (const auto& p : t->params) {
    auto given = std::find_if(spec.kwargs.begin(), spec.kwargs.end(),
                              [&](const auto& kv) { return kv.first == p.name; });
    if (given != spec.kwargs.end())
      bound.emplace_back(p.name, given->second);
    else if (p.default_value)
      bound.emplace_back(p.name, *p.default_value);
    else
      throw Error(spec.type + ": missing required argument '" + p.name + "'");
  }
  return t->make(nn::SpecArgs(spec.type, std::move(bound)));
}

}  // namespace fx
