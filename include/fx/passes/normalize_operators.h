#pragma once
// fx::passes::NormalizeOperators: torch.fx 2.14's NormalizeOperators
// (torch/fx/experimental/normalize.py). An AnnotateTypesWithSchema that
// also writes the torch functions that spell a binary operator as that
// operator: torch.add -> operator.add, and likewise torch.mul, sub, div
// (operator.truediv), floor_divide, remainder (operator.mod), eq, ne, lt,
// le, gt, ge. Only calls with exactly two positional arguments are
// rewritten, and their keyword arguments are dropped, as torch.fx 2.14 does
// (`torch.add(x, y, alpha=2)` becomes `x + y`).
//
//   auto normalized = fx::passes::NormalizeOperators(*gm).transform();
#include <fx/passes/annotate_types_with_schema.h>

namespace fx::passes {

class NormalizeOperators : public AnnotateTypesWithSchema {
 public:
  using AnnotateTypesWithSchema::AnnotateTypesWithSchema;
  Value call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override;
};

}  // namespace fx::passes
