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

#include "timing.h"

#include <cstdio>
#include <iostream>
#include <vector>

namespace {

int usage() {
  std::cerr << "usage: capture_bench [--runs N] [--batch B] [--threads T]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  fxbench::Flags flags{10};
  if (!fxbench::parse_flags(argc, argv, 1, flags)) return usage();
  const int runs = flags.runs, batch = flags.batch;
  if (flags.threads > 0) at::set_num_threads(flags.threads);
  const int threads = at::get_num_threads();
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
  std::vector<fxbench::Row> rows;
  model->eval();
  rows.push_back(fxbench::time_runs("eager_forward", 2, runs, [&] { forward(inputs); }));
  rows.push_back(fxbench::time_runs("capture_forward", 2, runs, [&] {
    forward_nodes = fx::capture(*model, forward, inputs, options)->graph().size();
  }));
  model->train();
  rows.push_back(fxbench::time_runs("eager_step", 2, runs, [&] { step(inputs); }));
  rows.push_back(fxbench::time_runs("capture_step", 2, runs, [&] {
    step_nodes = fx::capture(*model, step, inputs, options)->graph().size();
  }));

  std::cout << "{\"side\": \"fxcpp\", \"model\": \"resnet50\", \"batch\": " << batch
            << ", \"threads\": " << threads << ", \"runs\": " << runs
            << ", \"forward_nodes\": " << forward_nodes << ", \"step_nodes\": " << step_nodes << ", "
            << std::flush;
  fxbench::print_rows(rows);
  std::printf("}\n");
  return 0;
} catch (const std::exception& e) {
  std::cerr << "capture_bench: " << e.what() << "\n";
  return 1;
}
