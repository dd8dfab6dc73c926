// AnnotateTypesWithSchema: torch/fx/experimental/schema_type_annotation.py (torch.fx 2.14).
#include <fx/graph_module.h>
#include <fx/passes/annotate_types_with_schema.h>

#include <unordered_map>

#include "../module/module_dicts.h"

namespace fx::passes {

namespace {

struct ReturnTypes {
  std::unordered_map<std::string_view, std::string_view> functions, modules;
};

const ReturnTypes& return_types() {
  struct Entry {
    std::string_view kind, name, type;
  };
  static const ReturnTypes table = [] {
    static constexpr Entry kEntries[] = {
#include "python_return_types.inc"
    };
    ReturnTypes t;
    for (const Entry& e : kEntries) (e.kind == "module" ? t.modules : t.functions).emplace(e.name, e.type);
    return t;
  }();
  return table;
}

std::optional<std::string_view> find_type(const std::unordered_map<std::string_view, std::string_view>& m,
                                          std::string_view key) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

// Python's `node.type = node.type if node.type else python_ret_type`.
void annotate(const Value& v, std::optional<std::string_view> type) {
  if (!type || !v.is_proxy() || v.node()->type()) return;
  v.node()->set_type(std::string(*type));
}

}  // namespace

std::optional<std::string_view> functional_return_type(std::string_view qualified_name) {
  return find_type(return_types().functions, qualified_name);
}

std::optional<std::string_view> module_return_type(std::string_view class_name) {
  return find_type(return_types().modules, class_name);
}

AnnotateTypesWithSchema::AnnotateTypesWithSchema(GraphModule& module, bool annotate_functionals,
                                                 bool annotate_modules, bool annotate_get_attrs)
    : Transformer(module),
      annotate_functionals_(annotate_functionals),
      annotate_modules_(annotate_modules),
      annotate_get_attrs_(annotate_get_attrs) {}

Value AnnotateTypesWithSchema::call_function(Target target, const std::vector<Value>& args,
                                             const ValueKwargs& kwargs) {
  Value out = Transformer::call_function(target, args, kwargs);
  if (annotate_functionals_) annotate(out, functional_return_type(target.str()));
  return out;
}

Value AnnotateTypesWithSchema::call_module(Target target, const std::vector<Value>& args,
                                           const ValueKwargs& kwargs) {
  std::optional<std::string_view> type;
  if (annotate_modules_)
    if (torch::nn::Module* m = module().get_submodule(target.str()))
      type = module_return_type(fx::detail::type_of(*m));
  Value out = Transformer::call_module(target, args, kwargs);
  annotate(out, type);
  return out;
}

Value AnnotateTypesWithSchema::get_attr(Target target, const std::vector<Value>& args,
                                        const ValueKwargs& kwargs) {
  Value out = Transformer::get_attr(target, args, kwargs);
  // TorchScript infers Tensor for a tensor attribute and nothing for a module.
  if (annotate_get_attrs_ && !module().get_submodule(target.str())) {
    module().get_tensor(target.str());  // torch.fx: "Node referenced nonextent target" otherwise
    annotate(out, "torch.Tensor");
  }
  return out;
}

}  // namespace fx::passes
