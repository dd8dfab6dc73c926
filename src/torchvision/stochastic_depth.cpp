// torchvision.ops.stochastic_depth, which torchvision wraps with
// torch.fx.wrap: torch.fx records it as one call_function node.
#include <fx/runtime_args.h>

#include <ATen/ATen.h>

#include "register.h"

namespace fx::torchvision {

using namespace fx::runtime;

void register_stochastic_depth() {
  // torchvision/ops/stochastic_depth.py: drops whole residual branches per
  // row (or for the whole batch) while training; the identity otherwise.
  const std::string fn = "torchvision.ops.stochastic_depth.stochastic_depth";
  const std::vector<Param> params{req("input"), req("p"), req("mode"), opt("training", true)};
  register_function(
      fn, make_callable(fn, [fn, params](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
        auto a = bind(fn, params, args, kwargs);
        at::Tensor input = to_tensor(fn, a[0]);
        const double p = to_double(fn, a[1]);
        const std::string mode = to_str(fn, a[2]);
        if (p < 0.0 || p > 1.0)
          throw Error(fn + ": ValueError: drop probability has to be between 0 and 1, but got " +
                      std::to_string(p));
        if (mode != "batch" && mode != "row")
          throw Error(fn + ": ValueError: mode has to be either 'batch' or 'row', but got " + mode);
        if (!to_bool(fn, a[3]) || p == 0.0) return c10::IValue(input);
        const double survival_rate = 1.0 - p;
        std::vector<int64_t> size(static_cast<size_t>(input.dim()), 1);
        if (mode == "row" && input.dim() > 0) size[0] = input.size(0);
        at::Tensor noise = at::empty(size, input.options()).bernoulli_(survival_rate);
        if (survival_rate > 0.0) noise.div_(survival_rate);
        return c10::IValue(input * noise);
      }));
}

}  // namespace fx::torchvision
