// NormalizeOperators: torch/fx/experimental/normalize.py (torch.fx 2.14).
#include <fx/passes/normalize_operators.h>

#include <string_view>
#include <utility>

namespace fx::passes {

namespace {

// NormalizeOperators.binary_magic_method_remap.
std::optional<std::string_view> binary_operator_for(std::string_view target) {
  static constexpr std::pair<std::string_view, std::string_view> kRemap[] = {
      {"torch.add", "operator.add"},
      {"torch.mul", "operator.mul"},
      {"torch.sub", "operator.sub"},
      {"torch.div", "operator.truediv"},
      {"torch.floor_divide", "operator.floordiv"},
      {"torch.remainder", "operator.mod"},
      {"torch.eq", "operator.eq"},
      {"torch.ne", "operator.ne"},
      {"torch.lt", "operator.lt"},
      {"torch.le", "operator.le"},
      {"torch.gt", "operator.gt"},
      {"torch.ge", "operator.ge"}};
  for (const auto& [from, to] : kRemap)
    if (from == target) return to;
  return std::nullopt;
}

}  // namespace

Value NormalizeOperators::call_function(Target target, const std::vector<Value>& args,
                                        const ValueKwargs& kwargs) {
  std::optional<std::string_view> op = binary_operator_for(target.str());
  if (!op || args.size() != 2) return AnnotateTypesWithSchema::call_function(target, args, kwargs);
  return AnnotateTypesWithSchema::call_function(Target(std::string(*op)), args, {});
}

}  // namespace fx::passes
