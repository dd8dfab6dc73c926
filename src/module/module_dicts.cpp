#include "module_dicts.h"

#include <fx/module.h>

namespace fx::detail {

namespace {
using Children = torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>>;
using Tensors = torch::OrderedDict<std::string, at::Tensor>;

// The members are not public. Access is not checked for the arguments of an
// explicit instantiation ([temp.spec.general]/6), so instantiating these
// templates with the member pointers hands them to the friend functions:
// standard C++, and by name, so it follows LibTorch's class whatever its layout.
auto children_member();
auto parameters_member();
auto buffers_member();

template <Children torch::nn::Module::*M>
struct ChildrenAccess {
  friend auto children_member() { return M; }
};
template <Tensors torch::nn::Module::*P, Tensors torch::nn::Module::*B>
struct TensorsAccess {
  friend auto parameters_member() { return P; }
  friend auto buffers_member() { return B; }
};
template struct ChildrenAccess<&torch::nn::Module::children_>;
template struct TensorsAccess<&torch::nn::Module::parameters_, &torch::nn::Module::buffers_>;
}  // namespace

const Children& children_of(const torch::nn::Module& m) { return m.*children_member(); }
const Tensors& parameters_of(const torch::nn::Module& m) { return m.*parameters_member(); }
const Tensors& buffers_of(const torch::nn::Module& m) { return m.*buffers_member(); }

const std::shared_ptr<torch::nn::Module>* find_submodule(const torch::nn::Module& m, std::string_view path) {
  if (path.empty()) return nullptr;
  const torch::nn::Module* cur = &m;
  std::string atom;
  for (;;) {
    size_t dot = path.find('.');
    atom.assign(path.substr(0, dot));
    const std::shared_ptr<torch::nn::Module>* found = children_of(*cur).find(atom);
    if (!found || !*found) return nullptr;
    if (dot == std::string_view::npos) return found;
    cur = found->get();
    path.remove_prefix(dot + 1);
  }
}

bool has_member(const torch::nn::Module& m, const std::string& name) {
  return parameters_of(m).contains(name) || buffers_of(m).contains(name) || children_of(m).contains(name);
}

std::optional<std::pair<at::Tensor, TensorKind>> tensor_entry(const torch::nn::Module& m,
                                                              const std::string& name) {
  if (const auto* p = parameters_of(m).find(name); p && p->defined())
    return std::pair(*p, TensorKind::parameter);
  if (const auto* b = buffers_of(m).find(name); b && b->defined()) return std::pair(*b, TensorKind::buffer);
  if (const auto* fm = dynamic_cast<const Module*>(&m))
    if (const at::Tensor* a = fm->attribute(name)) return std::pair(*a, TensorKind::attribute);
  return std::nullopt;
}

std::string type_of(const torch::nn::Module& m) {
  const auto* fm = dynamic_cast<const Module*>(&m);
  return fm ? fm->type_name() : m.name();
}

bool is_container_type(std::string_view type) {
  return type == "torch.nn.Module" || type == "torch.nn.Sequential" || type == "torch.nn.ModuleList" ||
         type == "torch.nn.ModuleDict";
}

std::pair<std::string, std::string> split_path(std::string_view path) {
  size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return {"", std::string(path)};
  return {std::string(path.substr(0, dot)), std::string(path.substr(dot + 1))};
}

}  // namespace fx::detail
