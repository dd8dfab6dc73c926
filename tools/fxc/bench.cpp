// fxc bench FILE --inputs IN.pt [-n RUNS] [--warmup N] [--threads N]: latency
// of forward, and the time the file took to load.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "commands.h"

namespace fxc {

namespace {

// One line on stderr, redrawn; only when stderr is a terminal and the runs
// take long enough to be worth watching.
class ProgressBar {
 public:
  explicit ProgressBar(size_t total) : total_(total), shown_(is_terminal(2)) {}
  void update(size_t done, double elapsed_s) {
    if (!shown_ || elapsed_s < 1.0) return;
    const int width = 30;
    int filled = static_cast<int>(width * done / total_);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu runs", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total_);
    drawn_ = true;
  }
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\r%s\r", std::string(60, ' ').c_str());
  }

 private:
  size_t total_;
  bool shown_;
  bool drawn_ = false;
};

}  // namespace

int bench(const CommandLine& cl) {
  const size_t runs = cl.count("-n", "100"), warmup = cl.count("--warmup", "5");
  if (cl.has("--threads")) at::set_num_threads(static_cast<int>(cl.count("--threads", "1")));
  const auto load_start = std::chrono::steady_clock::now();
  Program program = load_program(cl.positional(0));
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  std::vector<c10::IValue> inputs = program.read_inputs(cl.option("--inputs"));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < warmup; ++i) program.run(inputs);
  std::vector<double> ms;
  ProgressBar bar(runs);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    program.run(inputs);
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    bar.update(i + 1, std::chrono::duration<double>(t1 - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%zu runs (after %zu warm-up), %d threads: min %.3f ms, median %.3f ms, max %.3f ms; load %.1f ms\n",
              runs, warmup, at::get_num_threads(), ms.front(), ms[ms.size() / 2], ms.back(), load_ms);
  return 0;
}

}  // namespace fxc
