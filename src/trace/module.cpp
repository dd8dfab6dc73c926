#include <fx/module.h>
#include <fx/tracer.h>

namespace fx {

Module::Module(std::string type_name, std::vector<Param> forward_params)
    : type_name_(std::move(type_name)), params_(std::move(forward_params)) {}

namespace {
// torch.nn.modules.module._addindent: indent every line but the first.
std::string add_indent(const std::string& s, size_t spaces) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(spaces, ' ');
  }
  return out;
}
}  // namespace

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
    child_lines.push_back("(" + child.key() + "): " + add_indent(child_repr, 2));
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
