// fxc run FILE --inputs IN.pt [--output OUT.pt]
#include <fx/state_dict.h>
#include <torch/torch.h>

#include <iostream>

#include "../../src/ir/repr.h"
#include "commands.h"

namespace fxc {

int run(const CommandLine& cl) {
  auto gm = load_module(cl.positional(0));
  std::vector<c10::IValue> inputs = read_inputs(*gm, cl.option("--inputs"));
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> outputs = output_tensors(gm->run(inputs));
  if (cl.has("--output")) {
    fx::save_tensors(outputs, cl.option("--output"));
  } else {
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << "output " << i << ": " << fx::detail::repr_dtype(outputs[i].scalar_type()) << outputs[i].sizes()
                << ", mean " << outputs[i].to(at::kDouble).mean().item<double>() << "\n";
  }
  return 0;
}

}  // namespace fxc
