// fx::compile beside LibTorch eager on five programs: exec_bench's chain of
// 1,000 tiny operators on a 4x4 tensor (per-operator overhead: one kernel
// when compiled); a chain of six
// pointwise operators on a 1024x1024 tensor (memory-bound: fusion's best
// case); softmax(x / 8) over rows of attention scores; LayerNorm over 768
// features of 512 tokens; and a transformer MLP block, Linear(768, 3072) +
// GELU + Linear(3072, 768) on 128 tokens (matrix products stay ATen calls;
// the biases and GELU fuse). bench/fx_compile_bench.py times the same programs
// with PyTorch eager and torch.compile (Inductor, CPU), and
// bench/run_compile_bench.sh prints them side by side.
//
//   compile_bench [--runs N] [--threads T]
//
// Prints one JSON object: per program, the first call's time (capture and
// build; the kernel cache is a fresh directory) and, for each row, the
// median, min and max of N timed calls after 3 untimed ones.
#include <fx/compile.h>
#include <torch/torch.h>

#include "timing.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace {

// exec_bench's chain: ten ops cycled, 1,000 in all.
at::Tensor tiny_chain(const at::Tensor& x) {
  at::Tensor prev = x;
  for (int i = 0; i < 100; ++i) {
    prev = at::add(prev, x);
    prev = prev * 0.5;
    prev = at::relu(prev);
    prev = prev.neg();
    prev = at::sigmoid(prev);
    prev = prev + x;
    prev = prev.mul(x);
    prev = at::neg(prev);
    prev = prev.relu();
    prev = prev.sigmoid();
  }
  return prev;
}

at::Tensor chain(const at::Tensor& x, const at::Tensor& b) { return torch::sigmoid(torch::relu(x * b + 1.0)) * x - 0.5; }

double ms_of(const std::function<void()>& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void report(const char* program, double first_call_ms, const std::vector<fxbench::Row>& rows, bool last) {
  std::printf("{\"program\": \"%s\", \"first_call_ms\": %.1f, ", program, first_call_ms);
  fxbench::print_rows(rows);
  std::printf("}%s", last ? "" : ", ");
}

}  // namespace

int main(int argc, char** argv) try {
  fxbench::Flags flags{50};
  if (!fxbench::parse_flags(argc, argv, 1, flags)) {
    std::cerr << "usage: compile_bench [--runs N] [--threads T]\n";
    return 2;
  }
  if (flags.threads > 0) at::set_num_threads(flags.threads);
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  fx::CompileOptions options;
  options.cache_dir = (std::filesystem::temp_directory_path() / ("fxcpp_compile_bench_" + std::to_string(getpid()))).string();

  std::printf("{\"side\": \"fxcpp\", \"threads\": %d, \"runs\": %d, \"programs\": [", at::get_num_threads(), flags.runs);

  at::Tensor small = torch::rand({4, 4}) * 2 - 1;
  auto tiny = fx::compile([](const std::vector<c10::IValue>& in) { return tiny_chain(in[0].toTensor()); }, options);
  double first = ms_of([&] { tiny->run({small}); });
  if (!at::allclose(tiny->run({small}).toTensor(), tiny_chain(small), 1e-5, 1e-6))
    throw std::runtime_error("1000-op chain differs");
  report("1,000-op chain [4, 4]", first,
         {fxbench::time_runs("eager", 3, flags.runs, [&] { tiny_chain(small); }),
          fxbench::time_runs("compiled", 3, flags.runs, [&] { tiny->run({small}); })},
         false);

  at::Tensor x = torch::randn({1024, 1024}), b = torch::randn({1024});
  auto pointwise = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); }, options);
  first = ms_of([&] { pointwise->run({x, b}); });
  if (!at::allclose(pointwise->run({x, b}).toTensor(), chain(x, b), 1e-5, 1e-6)) throw std::runtime_error("pointwise differs");
  report("pointwise chain [1024, 1024]", first,
         {fxbench::time_runs("eager", 3, flags.runs, [&] { chain(x, b); }),
          fxbench::time_runs("compiled", 3, flags.runs, [&] { pointwise->run({x, b}); })},
         false);

  at::Tensor scores = torch::randn({8 * 128, 128});
  auto softmax_fn = [](const at::Tensor& s) { return torch::softmax(s / 8.0, -1); };
  auto softmax = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return softmax_fn(in[0].toTensor()); }, options);
  first = ms_of([&] { softmax->run({scores}); });
  if (!at::allclose(softmax->run({scores}).toTensor(), softmax_fn(scores), 1e-5, 1e-6))
    throw std::runtime_error("softmax differs");
  report("softmax(x / 8) [1024, 128]", first,
         {fxbench::time_runs("eager", 3, flags.runs, [&] { softmax_fn(scores); }),
          fxbench::time_runs("compiled", 3, flags.runs, [&] { softmax->run({scores}); })},
         false);

  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({768}));
  at::Tensor hidden = torch::randn({512, 768});
  auto layer_norm = fx::compile(
      *norm, [&](const std::vector<c10::IValue>& in) { return norm->forward(in[0].toTensor()); }, options);
  first = ms_of([&] { layer_norm->run({hidden}); });
  if (!at::allclose(layer_norm->run({hidden}).toTensor(), norm->forward(hidden), 1e-4, 1e-5))
    throw std::runtime_error("layer_norm differs");
  report("LayerNorm(768) [512, 768]", first,
         {fxbench::time_runs("eager", 3, flags.runs, [&] { norm->forward(hidden); }),
          fxbench::time_runs("compiled", 3, flags.runs, [&] { layer_norm->run({hidden}); })},
         false);

  torch::nn::Sequential mlp(torch::nn::Linear(768, 3072), torch::nn::GELU(), torch::nn::Linear(3072, 768));
  at::Tensor tokens = torch::randn({128, 768});
  auto block = fx::compile(
      *mlp, [&](const std::vector<c10::IValue>& in) { return mlp->forward(in[0].toTensor()); }, options);
  first = ms_of([&] { block->run({tokens}); });
  if (!at::allclose(block->run({tokens}).toTensor(), mlp->forward(tokens), 1e-4, 1e-5)) throw std::runtime_error("mlp differs");
  report("MLP block 128x768 -> 3072 -> 768", first,
         {fxbench::time_runs("eager", 3, flags.runs, [&] { mlp->forward(tokens); }),
          fxbench::time_runs("compiled", 3, flags.runs, [&] { block->run({tokens}); })},
         true);
  std::printf("]}\n");
  std::filesystem::remove_all(options.cache_dir);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "compile_bench: " << e.what() << "\n";
  return 1;
}
