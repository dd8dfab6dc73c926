#include <fx/module.h>
#include <fx/tracer.h>

namespace fx {

Module::Module(std::string type_name, std::vector<Param> forward_params)
    : type_name_(std::move(type_name)), params_(std::move(forward_params)) {}

at::Tensor Module::register_attribute(const std::string& name, at::Tensor value) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(type_name_ + ".register_attribute: '" + name + "' is not a valid attribute name");
  if (named_parameters(false).contains(name) || named_buffers(false).contains(name) ||
      named_children().contains(name))
    throw Error(type_name_ + ".register_attribute: '" + name +
                "' is already a parameter, buffer or submodule");
  for (auto& [k, v] : attributes_)
    if (k == name) return v = std::move(value);
  attributes_.emplace_back(name, std::move(value));
  return attributes_.back().second;
}

std::vector<Value> Module::bind(std::vector<Value> args, ValueKwargs kwargs) const {
  auto where = [&] { return type_name_ + ".forward"; };
  if (args.size() > params_.size())
    throw Error(where() + " takes " + std::to_string(params_.size()) + " argument(s) but " +
                std::to_string(args.size()) + " were given");
  std::vector<std::optional<Value>> bound(params_.size());
  for (size_t i = 0; i < args.size(); ++i) bound[i] = std::move(args[i]);
  for (auto& [name, value] : kwargs) {
    size_t i = 0;
    while (i < params_.size() && params_[i].name != name) ++i;
    if (i == params_.size()) throw Error(where() + " got an unexpected keyword argument '" + name + "'");
    if (bound[i]) throw Error(where() + " got multiple values for argument '" + name + "'");
    bound[i] = std::move(value);
  }
  std::vector<Value> out;
  out.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!bound[i] && !params_[i].default_value)
      throw Error(where() + " missing required argument '" + params_[i].name + "'");
    out.push_back(bound[i] ? std::move(*bound[i]) : *params_[i].default_value);
  }
  return out;
}

Value Module::call(std::vector<Value> args, ValueKwargs kwargs) {
  std::vector<Value> bound = bind(args, kwargs);
  if (Tracer* t = Tracer::current())
    return t->call_module(
        *this, [&] { return forward(bound); }, args, kwargs);
  return forward(bound);
}

}  // namespace fx
