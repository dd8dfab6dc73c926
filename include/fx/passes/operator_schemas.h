#pragma once
// Argument normalization against a target's signature (torch.fx 2.14's
// torch/fx/operator_schemas.py): match a call's positional and keyword
// arguments to the parameters of what it calls, fill in the defaults, and
// return them positional-then-keyword (or keywords only).
//
//   // torch.flatten(x, 1)  ->  torch.flatten(input = x, start_dim = 1, end_dim = -1)
//   auto n = fx::passes::normalize_function("torch.flatten", {x_node, 1}, {}, true);
//
// Where the signature comes from, as torch.fx finds it:
// - Python functions (torch.nn.functional.relu, softmax, dropout, layer_norm,
//   max_pool2d..., torch.functional.split): torch 2.14's inspect.signature,
//   kept in a generated table (fx/python_function.h); functions
//   with *args are not normalized, as in FX;
// - builtins (torch.relu, torch.flatten, torch.nn.functional.gelu, torch.conv2d,
//   torch.ops.aten.*): every TorchScript schema of the ATen operator
//   (torch::jit::getAllOperatorsFor, what torch._C._jit_get_schemas_for_operator
//   returns), `self` renamed `input`. The arguments must bind to exactly one
//   schema; when several bind, the types of the arguments choose (FX's
//   type_matches), and a node argument's type is unknown (FX reads it from
//   node.meta["type"], which fxcpp does not keep), so the call stays as it is;
// - standard modules (fx::nn, torch.nn in Python): forward's parameters;
// - anything else (operator.*, builtins.*, math.*, user functions): no
//   signature, no normalization (std::nullopt).
//
// Errors (fx::Error): arguments that do not fit a Python function's or a
// module's signature (FX's TypeError); an operator torch.fx cannot make a
// Python signature of (a parameter named with a Python keyword, a type Python
// cannot name: FX's ValueError / NameError).

#include <fx/argument.h>
#include <fx/target.h>

#include <optional>
#include <string_view>

namespace fx {
class GraphModule;
}

namespace fx::passes {

struct ArgsKwargsPair {
  Args args;
  Kwargs kwargs;
};

// torch.fx's normalize_function, with the argument types NormalizeArgs gives it.
std::optional<ArgsKwargsPair> normalize_function(Target target, const Args& args, const Kwargs& kwargs,
                                                 bool normalize_to_only_use_kwargs = false);
// torch.fx's normalize_module: `target` names a submodule of `root`; only
// standard modules (fx::nn) are normalized.
std::optional<ArgsKwargsPair> normalize_module(const GraphModule& root, std::string_view target,
                                               const Args& args, const Kwargs& kwargs,
                                               bool normalize_to_only_use_kwargs = false);

}  // namespace fx::passes
