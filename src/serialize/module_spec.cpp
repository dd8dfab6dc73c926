// fx::module_spec and fx::make_module: binding keyword arguments to a
// constructor's parameters and reading them by kind. The classes themselves
// are listed in module_spec_types.cpp.
#include <fx/error.h>
#include <fx/module_spec.h>

#include "module_spec_types.h"

#include <torch/nn/module.h>

#include <algorithm>

namespace fx {
namespace detail {

const Argument& SpecArgs::at(const std::string& name) const {
  for (const auto& [k, v] : bound_)
    if (k == name) return v;
  throw Error(type_ + ": no argument '" + name + "' (fxcpp's table of constructor parameters is wrong)");
}

void SpecArgs::wrong_kind(const std::string& name, const char* wanted, const Argument& got) const {
  throw Error(type_ + ": argument '" + name + "' must be " + wanted + ", got " +
              std::string(got.kind_name()));
}

int64_t SpecArgs::integer(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<int64_t>()) wrong_kind(name, "an int", a);
  return a.get<int64_t>();
}

double SpecArgs::real(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<double>()) return a.get<double>();
  if (a.is<int64_t>()) return static_cast<double>(a.get<int64_t>());
  wrong_kind(name, "a float", a);
}

bool SpecArgs::boolean(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<bool>()) wrong_kind(name, "a bool", a);
  return a.get<bool>();
}

std::string SpecArgs::str(const std::string& name) const {
  const Argument& a = at(name);
  if (!a.is<std::string>()) wrong_kind(name, "a str", a);
  return a.get<std::string>();
}

std::optional<int64_t> SpecArgs::optional_integer(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<int64_t>()) wrong_kind(name, "an int or None", a);
  return a.get<int64_t>();
}

std::optional<double> SpecArgs::optional_real(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<double>() && !a.is<int64_t>()) wrong_kind(name, "a float or None", a);
  return real(name);
}

std::optional<bool> SpecArgs::optional_boolean(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return std::nullopt;
  if (!a.is<bool>()) wrong_kind(name, "a bool or None", a);
  return a.get<bool>();
}

namespace {

// The items of a tuple or list argument, or nullptr for any other kind.
const std::vector<Argument>* spec_sequence_items(const Argument& a) {
  if (a.is<Tuple>()) return &a.get<Tuple>().items;
  if (a.is<List>()) return &a.get<List>().items;
  return nullptr;
}

}  // namespace

std::vector<int64_t> SpecArgs::integers(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<int64_t>()) return {a.get<int64_t>()};
  const char* wanted = "an int or a tuple of ints";
  const auto* items = spec_sequence_items(a);
  if (!items) wrong_kind(name, wanted, a);
  std::vector<int64_t> out;
  for (const Argument& item : *items) {
    if (!item.is<int64_t>()) wrong_kind(name, wanted, item);
    out.push_back(item.get<int64_t>());
  }
  return out;
}

std::vector<int64_t> SpecArgs::integers_or_none(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return {};
  if (!a.is<int64_t>() && !spec_sequence_items(a)) wrong_kind(name, "None, an int or a tuple of ints", a);
  return integers(name);
}

std::vector<double> SpecArgs::reals_or_none(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is_none()) return {};
  const char* wanted = "None, a float or a tuple of floats";
  auto as_real = [&](const Argument& x) {
    if (x.is<double>()) return x.get<double>();
    if (x.is<int64_t>()) return static_cast<double>(x.get<int64_t>());
    wrong_kind(name, wanted, x);
  };
  const auto* items = spec_sequence_items(a);
  if (!items) return {as_real(a)};
  std::vector<double> out;
  for (const Argument& item : *items) out.push_back(as_real(item));
  return out;
}

nn::PoolArg SpecArgs::pool(const std::string& name) const {
  const Argument& a = at(name);
  if (a.is<int64_t>()) return nn::PoolArg(a.get<int64_t>());
  const char* wanted = "an int or a tuple of ints";
  const auto* items = spec_sequence_items(a);
  if (!items) wrong_kind(name, wanted, a);
  std::vector<std::optional<int64_t>> out;
  for (const Argument& item : *items) {
    if (item.is_none())
      out.emplace_back(std::nullopt);
    else if (item.is<int64_t>())
      out.emplace_back(item.get<int64_t>());
    else
      wrong_kind(name, wanted, item);
  }
  return nn::PoolArg(std::move(out));
}

std::optional<nn::PoolArg> SpecArgs::optional_pool(const std::string& name) const {
  if (at(name).is_none()) return std::nullopt;
  return pool(name);
}

}  // namespace detail

namespace {

const detail::SpecType* find_spec_type(const std::string& type) {
  const auto& types = detail::spec_types();
  auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.type == type; });
  return it == types.end() ? nullptr : &*it;
}

// The C++ class of `m`, for a message about a module fxcpp cannot describe.
std::string spec_module_name(const torch::nn::Module& m) {
  if (const auto* fm = dynamic_cast<const Module*>(&m)) return fm->type_name();
  return m.name() + " (a torch::nn module)";
}

}  // namespace

ModuleSpec module_spec(const torch::nn::Module& m) {
  const auto* fm = dynamic_cast<const Module*>(&m);
  const detail::SpecType* t = fm ? find_spec_type(fm->type_name()) : nullptr;
  if (!t)
    throw Error("module_spec: " + spec_module_name(m) +
                " is not a torch.nn module that fxcpp knows how to construct; build the model from "
                "fx::nn modules and containers, or let the tracer go through it (is_leaf_module false) "
                "so that its own operations become graph nodes");
  Args values = t->describe(*fm);
  if (values.size() != t->params.size())
    throw Error("module_spec: " + t->type + ": fxcpp's table reads " + std::to_string(values.size()) +
                " arguments for " + std::to_string(t->params.size()) + " parameters");
  ModuleSpec spec{t->type, {}};
  for (size_t i = 0; i < values.size(); ++i)
    spec.kwargs.emplace_back(t->params[i].name, std::move(values[i]));
  return spec;
}

std::shared_ptr<torch::nn::Module> make_module(const ModuleSpec& spec) {
  const detail::SpecType* t = find_spec_type(spec.type);
  if (!t)
    throw Error("make_module: unknown module type '" + spec.type +
                "'; fxcpp constructs the torch.nn modules of fx::nn (include/fx/nn/) and the containers "
                "torch.nn.Module, Sequential, ModuleList and ModuleDict");
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
  return t->make(detail::SpecArgs(spec.type, std::move(bound)));
}

}  // namespace fx
