#include <fx/module.h>
#include <fx/python_function.h>
#include <fx/tracer.h>
#include "../ir/repr.h"
#include "module_dicts.h"

namespace fx {

Module::Module(std::string type_name, std::vector<Param> forward_params)
    : type_name_(std::move(type_name)), params_(std::move(forward_params)) {}

std::string Module::repr() const {
  std::vector<std::string> extra_lines;
  std::string extra = extra_repr();
  for (size_t start = 0; !extra.empty() && start <= extra.size();) {
    size_t nl = extra.find('\n', start);
    extra_lines.push_back(extra.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  std::vector<std::string> child_lines;
  for (const auto& child : named_children()) {
    const auto* m = dynamic_cast<const Module*>(child.value().get());
    std::string child_repr = m ? m->repr() : "Module()";
    child_lines.push_back("(" + child.key() + "): " + detail::add_indent(child_repr, 2));
  }
  size_t dot = type_name_.rfind('.');
  std::string out = dot == std::string::npos ? type_name_ : type_name_.substr(dot + 1);
  out += '(';
  if (extra_lines.size() == 1 && child_lines.empty()) {
    out += extra_lines[0];
  } else if (!extra_lines.empty() || !child_lines.empty()) {
    out += "\n";
    for (const auto& l : extra_lines) out += "  " + l + "\n";
    for (const auto& l : child_lines) out += "  " + l + "\n";
  }
  return out + ")";
}

at::Tensor Module::register_attribute(const std::string& name, at::Tensor value) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(type_name_ + ".register_attribute: '" + name + "' is not a valid attribute name");
  if (detail::has_member(*this, name))
    throw Error(type_name_ + ".register_attribute: '" + name +
                "' is already a parameter, buffer or submodule");
  auto [it, fresh] = attribute_index_.try_emplace(name, attributes_.size());
  if (!fresh) return attributes_[it->second].second = std::move(value);
  attributes_.emplace_back(name, std::move(value));
  return attributes_.back().second;
}

namespace {
// The common call: exactly the positional parameters, nothing to bind.
bool binds_as_given(const std::vector<Value>& args, const ValueKwargs& kwargs, size_t params) {
  return kwargs.empty() && args.size() == params;
}
}  // namespace

std::vector<Value> Module::bind(std::vector<Value> args, ValueKwargs kwargs) const {
  if (binds_as_given(args, kwargs, params_.size())) return args;
  std::vector<int64_t> slots;
  std::string why;
  if (!fast_bind_call(params_, args.size(), kwargs, slots, why))
    throw Error(type_name_ + ".forward: TypeError: " + why);
  std::vector<Value> out;
  out.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    // Apart: a conditional of an rvalue and a const lvalue copies both.
    if (Value* given = bound_argument(slots[i], args, kwargs))
      out.push_back(std::move(*given));
    else
      out.push_back(*params_[i].default_value);
  }
  return out;
}

namespace {
void copy_tensor(const std::string& owner, const std::string& name, at::Tensor& dst, const at::Tensor& src) {
  if (!dst.defined() || !src.defined()) {
    if (dst.defined() != src.defined())
      throw Error(owner + ".copy_state_from: '" + name + "' is defined on one side only");
    return;
  }
  if (dst.sizes() != src.sizes())
    throw Error(owner + ".copy_state_from: '" + name + "' has shape " + c10::str(dst.sizes()) + " here but " +
                c10::str(src.sizes()) + " in the source");
  torch::NoGradGuard no_grad;
  dst.copy_(src);
}

}  // namespace

void Module::copy_state_from(const torch::nn::Module& other) {
  train(other.is_training());                         // recursive; children's own flags follow below
  auto other_params = other.named_parameters(false);  // kept: find() points into it
  for (auto& item : named_parameters(false)) {
    const std::string& name = item.key();
    at::Tensor& dst = item.value();
    const at::Tensor* src = other_params.find(name);
    if (!src)
      throw Error(type_name_ + ".copy_state_from: the source " + detail::type_of(other) +
                  " has no parameter '" + name + "'");
    copy_tensor(type_name_, name, dst, *src);
  }
  auto other_buffers = other.named_buffers(false);
  for (auto& item : named_buffers(false)) {
    const std::string& name = item.key();
    at::Tensor& dst = item.value();
    const at::Tensor* src = other_buffers.find(name);
    if (!src)
      throw Error(type_name_ + ".copy_state_from: the source " + detail::type_of(other) + " has no buffer '" +
                  name + "'");
    copy_tensor(type_name_, name, dst, *src);
  }
  if (const auto* fm = dynamic_cast<const Module*>(&other))
    for (const auto& [name, value] : fm->attributes()) register_attribute(name, value.clone());
  auto other_children = other.named_children();
  for (auto& item : named_children()) {
    const std::string& name = item.key();
    const std::shared_ptr<torch::nn::Module>& child = item.value();
    const auto* src = other_children.find(name);
    if (!src)
      throw Error(type_name_ + ".copy_state_from: the source " + detail::type_of(other) +
                  " has no submodule '" + name + "'");
    if (auto* fm = dynamic_cast<Module*>(child.get()))
      fm->copy_state_from(**src);
    else
      throw Error(type_name_ + ".copy_state_from: submodule '" + name + "' is not an fx::Module");
  }
}

Value Module::call(std::vector<Value> args, ValueKwargs kwargs) {
  Tracer* t = Tracer::current();
  if (!t) return forward(bind(std::move(args), std::move(kwargs)));
  // Bound before the call, so a bad call fails for a leaf too; a call as
  // given is not copied (a leaf's forward does not run).
  const bool as_given = binds_as_given(args, kwargs, params_.size());
  std::vector<Value> bound = as_given ? std::vector<Value>{} : bind(args, kwargs);
  // Two pointers: small enough for std::function to hold without allocating.
  const std::vector<Value>* forward_args = as_given ? &args : &bound;
  return t->call_module(
      *this, [this, forward_args] { return forward(*forward_args); }, args, kwargs);
}

}  // namespace fx
