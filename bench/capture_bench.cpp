// What fx::capture costs on torchvision's resnet50 (fx::models::resnet50, the
// port in models/): the time to capture a forward, and a training step
// (forward, sum, torch::autograd::grad over the parameters), beside one eager
// run of the same code. bench/fx_capture_bench.py times make_fx on the
// Python original the same way; bench/run_capture_bench.sh prints both.
//
//   capture_bench [--runs N] [--batch B] [--threads T]
//
// Prints one JSON object: for each row the median, min and max of N timed
// runs after 2 untimed ones.

#include <fx/capture.h>
#include <fx/models/resnet.h>
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

Row time_runs(const std::string& name, int runs, const std::function<void()>& body) {
  for (int i = 0; i < 2; ++i) body();
  Row row{name, {}};
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    row.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    std::fprintf(stderr, "\r%-24s %3d/%d", name.c_str(), i + 1, runs);
  }
  std::fprintf(stderr, "\n");
  std::sort(row.ms.begin(), row.ms.end());
  return row;
}

int usage() {
  std::cerr << "usage: capture_bench [--runs N] [--batch B] [--threads T]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  int runs = 10, batch = 1, threads = 0;  // 0: LibTorch's default (the cores)
  for (int i = 1; i < argc; i += 2) {
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
  const at::Tensor x = torch::rand({batch, 3, 224, 224});
  const std::vector<c10::IValue> inputs{x};

  auto forward = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    return (*model)(fx::Value(in[0])).ivalue();
  };
  auto step = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor loss = (*model)(fx::Value(in[0])).tensor().sum();
    auto grads = torch::autograd::grad({loss}, model->parameters());
    return c10::ivalue::Tuple::create({loss, c10::List<at::Tensor>(grads)});
  };
  fx::CaptureOptions options;
  options.input_names = {"x"};

  size_t forward_nodes = 0, step_nodes = 0;
  std::vector<Row> rows;
  model->eval();
  rows.push_back(time_runs("eager_forward", runs, [&] { forward(inputs); }));
  rows.push_back(time_runs("capture_forward", runs,
                           [&] { forward_nodes = fx::capture(*model, forward, inputs, options)->graph().size(); }));
  model->train();
  rows.push_back(time_runs("eager_step", runs, [&] { step(inputs); }));
  rows.push_back(time_runs("capture_step", runs,
                           [&] { step_nodes = fx::capture(*model, step, inputs, options)->graph().size(); }));

  std::cout << "{\"side\": \"fxcpp\", \"model\": \"resnet50\", \"batch\": " << batch << ", \"threads\": " << threads
            << ", \"runs\": " << runs << ", \"forward_nodes\": " << forward_nodes
            << ", \"step_nodes\": " << step_nodes << ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& ms = rows[i].ms;
    std::printf("%s{\"row\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f}", i ? ", " : "",
                rows[i].name.c_str(), ms[ms.size() / 2], ms.front(), ms.back());
    std::fflush(stdout);
  }
  std::cout << "]}" << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "capture_bench: " << e.what() << "\n";
  return 1;
}
