// Conv+BatchNorm folding on torchvision's resnet50 (fx::models::resnet50, the
// port in models/), eval mode: the latency of one forward before and after
// fx::passes::fuse, beside the C++ model run eagerly. bench/fx_fuse_bench.py
// runs the same three in Python (torchvision eager, torch.fx's GraphModule,
// torch.fx.experimental.optimization.fuse) on the weights this program saves,
// and bench/run_fuse_bench.sh prints them side by side.
//
//   fuse_bench WEIGHTS.pt [--runs N] [--batch B] [--threads T]
//
// Writes WEIGHTS.pt (the model's state dict, BatchNorm statistics randomized
// so that folding changes the weights), then prints one JSON object: for each
// row the median, min and max of N timed forwards after 3 untimed ones, on
// LibTorch's default number of threads unless --threads says.

#include <fx/fx.h>
#include <fx/models/batch_norm_statistics.h>
#include <fx/models/resnet.h>
#include <fx/passes/fuse.h>
#include <fx/state_dict.h>
#include <torch/torch.h>

#include "timing.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

int usage() {
  std::cerr << "usage: fuse_bench WEIGHTS.pt [--runs N] [--batch B] [--threads T]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) return usage();
  const std::string weights = argv[1];
  fxbench::Flags flags{50};
  if (!fxbench::parse_flags(argc, argv, 2, flags)) return usage();
  const int runs = flags.runs, batch = flags.batch;
  if (flags.threads > 0) at::set_num_threads(flags.threads);
  const int threads = at::get_num_threads();
  torch::manual_seed(0);
  auto model = fx::models::resnet50();
  fx::models::randomize_batch_norm_statistics(*model);
  model->eval();
  fx::save_state_dict(*model, weights);

  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::rand({batch, 3, 224, 224});
  auto traced = fx::symbolic_trace(*model);
  auto fused = fx::passes::fuse(*model);
  const at::Tensor expected = (*model)(x).tensor();
  const at::Tensor got = fused->run({x}).toTensor();
  if (!torch::allclose(got, expected, 1e-3, 1e-3)) {
    std::cerr << "fuse_bench: the fused model's output differs from the model's (max abs diff "
              << (got - expected).abs().max().item<double>() << ")\n";
    return 1;
  }
  size_t bn_nodes = 0;
  for (fx::Node* n : fused->graph().nodes()) {
    if (n->op() != fx::Op::call_module) continue;
    const auto* m = dynamic_cast<const fx::Module*>(fused->get_submodule(n->target().str()));
    if (m && m->type_name() == "torch.nn.BatchNorm2d") ++bn_nodes;
  }
  if (bn_nodes != 0) {
    std::cerr << "fuse_bench: " << bn_nodes << " BatchNorm calls left after fuse\n";
    return 1;
  }

  std::vector<fxbench::Row> rows;
  rows.push_back(fxbench::time_runs("eager", 3, runs, [&] { (*model)(x).tensor(); }));
  rows.push_back(fxbench::time_runs("graph_module", 3, runs, [&] { traced->run({x}).toTensor(); }));
  rows.push_back(fxbench::time_runs("fused", 3, runs, [&] { fused->run({x}).toTensor(); }));

  std::cout << "{\"side\": \"fxcpp\", \"model\": \"resnet50\", \"batch\": " << batch
            << ", \"threads\": " << threads << ", \"runs\": " << runs << ", " << std::flush;
  fxbench::print_rows(rows);
  std::printf("}\n");
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fuse_bench: " << e.what() << "\n";
  return 1;
}
