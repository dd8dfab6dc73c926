#pragma once
// fx::passes::AnnotateTypesWithSchema: torch.fx 2.14's
// torch/fx/experimental/schema_type_annotation.py. A Transformer that gives
// the nodes it records the type annotations Python's signatures declare:
// - a call of a torch.nn.functional function: the function's return
//   annotation (`torch.Tensor`, `tuple[torch.Tensor, torch.Tensor]`);
//   a boolean-dispatched one (F.max_pool2d) only when both branches return
//   the same type;
// - a call of a standard torch.nn module: its forward's return annotation;
// - a get_attr of a tensor: `torch.Tensor` (TorchScript's inferred type).
// Nothing where Python has no annotation or `-> None`. The annotations are
// torch 2.14's, in a table generated from it (scripts/gen_python_return_types.py).
//
//   auto annotated = fx::passes::AnnotateTypesWithSchema(*gm).transform();
//   // relu : torch.Tensor = torch.nn.functional.relu(x, inplace = False)
#include <fx/transformer.h>

#include <optional>
#include <string>
#include <string_view>

namespace fx::passes {

class AnnotateTypesWithSchema : public Transformer {
 public:
  explicit AnnotateTypesWithSchema(GraphModule& module, bool annotate_functionals = true,
                                   bool annotate_modules = true, bool annotate_get_attrs = true);

  Value call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
  Value get_attr(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;

 private:
  bool annotate_functionals_, annotate_modules_, annotate_get_attrs_;
};

// torch 2.14's return annotation of a torch.nn.functional function (by the
// qualified name torch.fx prints) or of a torch.nn module class's forward
// ("torch.nn.Conv2d"), as torch.fx prints a node's type; nullopt for none.
std::optional<std::string_view> functional_return_type(std::string_view qualified_name);
std::optional<std::string_view> module_return_type(std::string_view class_name);

}  // namespace fx::passes
