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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Row {
  std::string name;
  std::vector<double> ms;  // sorted
};

Row time_forward(const std::string& name, int runs, const std::function<at::Tensor()>& forward) {
  for (int i = 0; i < 3; ++i) forward();  // allocator and caches warm
  Row row{name, {}};
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    at::Tensor out = forward();
    row.ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    std::fprintf(stderr, "\r%-28s %3d/%d", name.c_str(), i + 1, runs);
  }
  std::fprintf(stderr, "\n");
  std::sort(row.ms.begin(), row.ms.end());
  return row;
}

int usage() {
  std::cerr << "usage: fuse_bench WEIGHTS.pt [--runs N] [--batch B] [--threads T]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) return usage();
  const std::string weights = argv[1];
  int runs = 50, batch = 1, threads = 0;  // 0: LibTorch's default (the cores)
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    const std::string flag = argv[i];
    const int value = std::stoi(argv[i + 1]);
    if (flag == "--runs")
      runs = value;
    else if (flag == "--batch")
      batch = value;
    else if (flag == "--threads")
      threads = value;
    else
      return usage();
  }
  if (threads > 0) at::set_num_threads(threads);
  threads = at::get_num_threads();
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

  std::vector<Row> rows;
  rows.push_back(time_forward("eager", runs, [&] { return (*model)(x).tensor(); }));
  rows.push_back(time_forward("graph_module", runs, [&] { return traced->run({x}).toTensor(); }));
  rows.push_back(time_forward("fused", runs, [&] { return fused->run({x}).toTensor(); }));

  std::cout << "{\"side\": \"fxcpp\", \"model\": \"resnet50\", \"batch\": " << batch
            << ", \"threads\": " << threads << ", \"runs\": " << runs << ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& ms = rows[i].ms;
    std::printf("%s{\"row\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f}", i ? ", " : "",
                rows[i].name.c_str(), ms[ms.size() / 2], ms.front(), ms.back());
    std::fflush(stdout);
  }
  std::cout << "]}" << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fuse_bench: " << e.what() << "\n";
  return 1;
}
