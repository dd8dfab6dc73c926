// fx::compile beside LibTorch eager on these programs: exec_bench's chain of
// 1,000 tiny operators on a 4x4 tensor (per-operator overhead: one kernel
// when compiled); ten 4x4 inputs added and multiplied (per-call overhead:
// guards on ten tensors around a kernel of 16 elements); a chain of six
// pointwise operators on a 1024x1024 tensor (memory-bound: fusion's best
// case); softmax(x / 8) over rows of attention scores, and with a causal
// mask (masked_fill by a bool [128, 128] tensor); LayerNorm over 768
// features of 512 tokens; and a transformer MLP block, Linear(768, 3072) +
// GELU + Linear(3072, 768) on 128 tokens (matrix products stay ATen calls;
// the biases and GELU fuse); and a ResNet bottleneck's 1x1 convolution with
// its batch norm (eval) and ReLU (the normalization and ReLU fuse after the
// convolution); two chains of ten pointwise operators on 4M floats, one
// arithmetic, one with a sigmoid and a tanh, beside the copy floor (x.clone(): one read and one write of the
// tensor, as the fused kernel's); RMSNorm; gelu(x @ W + b) alone; and log_softmax + nll_loss, at
// [512, 1000] and at a language model's vocabulary; a mean squared error
// over 4M floats (a reduction over every dimension); a training step of an
// MLP classifier (forward, loss and backward: fx::compile_training_step),
// and the same classifier compiled as a module and called under autograd
// (its forward and backward compiled apart, the loss and backward() around
// it; torch.compile(model) on the Python side).
// bench/fx_compile_bench.py times the same programs
// with PyTorch eager and torch.compile (Inductor, CPU), and
// bench/run_compile_bench.sh prints them side by side.
//
//   compile_bench [--runs N] [--threads T]
//
// Prints one JSON object: per program, the first call's time (capture and
// build; the kernel cache is a fresh directory), the first call's times at a
// second and a third size (a smaller first dimension: the second builds the
// dynamic kernels, the third only captures; log_softmax + nll_loss's labels
// are cut alike) and, for each row, the median, min and max of N
// timed calls after 3 untimed ones.
#include <fx/compile.h>
#include <torch/torch.h>

#include "timing.h"
#include "tiny_chain.h"

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>

namespace {

at::Tensor chain(const at::Tensor& x, const at::Tensor& b) {
  return torch::sigmoid(torch::relu(x * b + 1.0)) * x - 0.5;
}

// Ten pointwise operators: one read of x and b, one write, when fused.
// Arithmetic only (memory-bound), and with a sigmoid and a tanh (bound by
// their vector code).
at::Tensor arithmetic10(const at::Tensor& x, const at::Tensor& b) {
  at::Tensor t = torch::relu(x * b + 1.0) * 0.5 - x;
  return torch::abs((t + x) * 2.0 - 1.0) * x;
}

at::Tensor chain10(const at::Tensor& x, const at::Tensor& b) {
  at::Tensor t = torch::relu(x * b + 1.0) * 0.5 - x;
  return torch::tanh((torch::sigmoid(t) + x) * 2.0 - 1.0);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) {
  return x * torch::rsqrt((x * x).mean(-1, true) + 1e-6) * w;
}

using Inputs = std::vector<c10::IValue>;
// The compiled side of a program: a compiled module's run, or code around one.
using Run = std::function<c10::IValue(const Inputs&)>;

// The first call's milliseconds, and a check against `eager`.
double first_call(const char* name, const Run& compiled,
                  const std::function<at::Tensor(const Inputs&)>& eager, const Inputs& inputs, double rtol,
                  double atol) {
  auto start = std::chrono::steady_clock::now();
  compiled(inputs);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!at::allclose(compiled(inputs).toTensor(), eager(inputs), rtol, atol))
    throw std::runtime_error(std::string(name) + ": the compiled output differs from eager's");
  return ms;
}

// One program: the first call of `compiled` (capture and build), both
// timed, then the first calls at two other sizes (the first input with a
// smaller first dimension). Prints its JSON object.
// `floor`, when given, is timed as a third row: what the program cannot beat.
// `batched`: how many inputs, from the first, are cut at other sizes.
void program(const char* name, const fxbench::Flags& flags, const Run& compiled,
             const std::function<at::Tensor(const Inputs&)>& eager, const Inputs& inputs, double rtol,
             double atol, bool last, const std::function<void()>& floor = {}, size_t batched = 1) {
  const double first_ms = first_call(name, compiled, eager, inputs, rtol, atol);
  std::printf("{\"program\": \"%s\", \"first_call_ms\": %.1f, ", name, first_ms);
  std::vector<fxbench::Row> rows = {fxbench::time_runs("eager", 3, flags.runs, [&] { eager(inputs); }),
                                    fxbench::time_runs("compiled", 3, flags.runs, [&] { compiled(inputs); })};
  if (floor) rows.push_back(fxbench::time_runs("floor", 3, flags.runs, floor));
  fxbench::print_rows(rows);
  // The first call at a second size (fx::compile builds dynamic kernels),
  // then at a third (they serve it).
  const at::Tensor& x = inputs[0].toTensor();
  double ms[2];
  for (int i = 0; i < 2; ++i) {
    Inputs resized = inputs;
    for (size_t j = 0; j < batched; ++j)
      resized[j] = resized[j].toTensor().narrow(0, 0, x.size(0) * (3 - i) / 4).contiguous();
    ms[i] = first_call(name, compiled, eager, resized, rtol, atol);
  }
  std::printf(", \"second_size_first_call_ms\": %.1f, \"third_size_first_call_ms\": %.1f}%s", ms[0], ms[1],
              last ? "" : ", ");
}

void program(const char* name, const fxbench::Flags& flags, fx::CompiledModule& compiled,
             const std::function<at::Tensor(const Inputs&)>& eager, const Inputs& inputs, double rtol,
             double atol, bool last, const std::function<void()>& floor = {}, size_t batched = 1) {
  program(
      name, flags, [&compiled](const Inputs& in) { return compiled.run(in); }, eager, inputs, rtol, atol,
      last, floor, batched);
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
  options.cache_dir =
      (std::filesystem::temp_directory_path() / ("fxcpp_compile_bench_" + std::to_string(getpid()))).string();

  std::printf("{\"side\": \"fxcpp\", \"threads\": %d, \"runs\": %d, \"programs\": [", at::get_num_threads(),
              flags.runs);

  auto fn = [](auto body) {
    return [body](const std::vector<c10::IValue>& in) -> c10::IValue { return body(in); };
  };
  at::Tensor small = torch::rand({4, 4}) * 2 - 1;
  auto tiny =
      fx::compile(fn([](const auto& in) { return fxbench::handwritten(in[0].toTensor(), 1000); }), options);
  program(
      "1,000-op chain [4, 4]", flags, *tiny,
      [&](const Inputs& in) { return fxbench::handwritten(in[0].toTensor(), 1000); }, {small}, 1e-5, 1e-6,
      false);

  // Ten inputs of 16 elements, one kernel: what a call costs beyond its
  // kernel (guards on ten tensors, the GraphModule, the output).
  auto ten_fn = [](const Inputs& in) {
    at::Tensor y = in[0].toTensor();
    for (size_t i = 1; i < in.size(); ++i) y = i % 2 ? y + in[i].toTensor() : y * in[i].toTensor();
    return y;
  };
  Inputs ten;
  for (int i = 0; i < 10; ++i) ten.emplace_back(torch::rand({4, 4}));
  auto ten_inputs = fx::compile(fn(ten_fn), options);
  program("10 inputs [4, 4], per-call overhead", flags, *ten_inputs, ten_fn, ten, 1e-5, 1e-6, false, {}, 10);

  at::Tensor x = torch::randn({1024, 1024}), b = torch::randn({1024});
  auto pointwise =
      fx::compile(fn([](const auto& in) { return chain(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "pointwise chain [1024, 1024]", flags, *pointwise,
      [&](const Inputs& in) { return chain(in[0].toTensor(), in[1].toTensor()); }, {x, b}, 1e-5, 1e-6, false);

  at::Tensor scores = torch::randn({8 * 128, 128});
  auto softmax_fn = [](const at::Tensor& s) { return torch::softmax(s / 8.0, -1); };
  auto softmax = fx::compile(fn([&](const auto& in) { return softmax_fn(in[0].toTensor()); }), options);
  program(
      "softmax(x / 8) [1024, 128]", flags, *softmax,
      [&](const Inputs& in) { return softmax_fn(in[0].toTensor()); }, {scores}, 1e-5, 1e-6, false);

  at::Tensor heads = torch::randn({8, 128, 128}), causal = torch::ones({128, 128}, torch::kBool).triu(1);
  auto masked_fn = [](const at::Tensor& s, const at::Tensor& m) {
    return torch::softmax(s.masked_fill(m, -std::numeric_limits<double>::infinity()) / 8.0, -1);
  };
  auto masked =
      fx::compile(fn([&](const auto& in) { return masked_fn(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "masked softmax [8, 128, 128]", flags, *masked,
      [&](const Inputs& in) { return masked_fn(in[0].toTensor(), in[1].toTensor()); }, {heads, causal}, 1e-5,
      1e-6, false);

  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({768}));
  at::Tensor hidden = torch::randn({512, 768});
  auto layer_norm =
      fx::compile(*norm, fn([&](const auto& in) { return norm->forward(in[0].toTensor()); }), options);
  program(
      "LayerNorm(768) [512, 768]", flags, *layer_norm,
      [&](const Inputs& in) { return norm->forward(in[0].toTensor()); }, {hidden}, 1e-4, 1e-5, false);

  torch::nn::Sequential mlp(torch::nn::Linear(768, 3072), torch::nn::GELU(), torch::nn::Linear(3072, 768));
  at::Tensor tokens = torch::randn({128, 768});
  auto block = fx::compile(*mlp, fn([&](const auto& in) { return mlp->forward(in[0].toTensor()); }), options);
  program(
      "MLP block 128x768 -> 3072 -> 768", flags, *block,
      [&](const Inputs& in) { return mlp->forward(in[0].toTensor()); }, {tokens}, 1e-4, 1e-5, false);

  torch::nn::Sequential conv_bn(torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 64, 1).bias(false)),
                                torch::nn::BatchNorm2d(64), torch::nn::ReLU());
  conv_bn->eval();
  at::Tensor maps = torch::randn({8, 64, 28, 28});
  auto conv_block =
      fx::compile(*conv_bn, fn([&](const auto& in) { return conv_bn->forward(in[0].toTensor()); }), options);
  program(
      "Conv1x1 + BatchNorm + ReLU [8, 64, 28, 28]", flags, *conv_block,
      [&](const Inputs& in) { return conv_bn->forward(in[0].toTensor()); }, {maps}, 1e-4, 1e-5, false);

  at::Tensor big = torch::randn({4096, 1024}), big_b = torch::randn({1024});
  auto arithmetic = fx::compile(
      fn([](const auto& in) { return arithmetic10(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "10 arithmetic ops [4096, 1024], copy floor", flags, *arithmetic,
      [&](const Inputs& in) { return arithmetic10(in[0].toTensor(), in[1].toTensor()); }, {big, big_b}, 1e-5,
      1e-6, false, [&] { big.clone(); });
  auto pointwise10 =
      fx::compile(fn([](const auto& in) { return chain10(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "10 ops with sigmoid and tanh [4096, 1024], copy floor", flags, *pointwise10,
      [&](const Inputs& in) { return chain10(in[0].toTensor(), in[1].toTensor()); }, {big, big_b}, 1e-5, 1e-6,
      false, [&] { big.clone(); });

  at::Tensor rms_w = torch::randn({768});
  auto rms =
      fx::compile(fn([](const auto& in) { return rms_norm(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "RMSNorm(768) [512, 768]", flags, *rms,
      [&](const Inputs& in) { return rms_norm(in[0].toTensor(), in[1].toTensor()); }, {hidden, rms_w}, 1e-4,
      1e-5, false);

  torch::nn::Sequential up(torch::nn::Linear(768, 3072), torch::nn::GELU());
  auto up_block =
      fx::compile(*up, fn([&](const auto& in) { return up->forward(in[0].toTensor()); }), options);
  program(
      "gelu(x @ W + b) 128x768 -> 3072", flags, *up_block,
      [&](const Inputs& in) { return up->forward(in[0].toTensor()); }, {tokens}, 1e-4, 1e-5, false);

  at::Tensor logits = torch::randn({512, 1000}), labels = torch::randint(1000, {512});
  auto nll_fn = [](const at::Tensor& l, const at::Tensor& t) {
    return torch::nll_loss(torch::log_softmax(l, -1), t);
  };
  auto nll =
      fx::compile(fn([&](const auto& in) { return nll_fn(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "log_softmax + nll_loss [512, 1000]", flags, *nll,
      [&](const Inputs& in) { return nll_fn(in[0].toTensor(), in[1].toTensor()); }, {logits, labels}, 1e-4,
      1e-5, false, {}, 2);
  // A language model's vocabulary: the log-probabilities eager writes are 262 MB.
  at::Tensor vocab_logits = torch::randn({2048, 32000}), vocab_labels = torch::randint(32000, {2048});
  auto vocab_nll =
      fx::compile(fn([&](const auto& in) { return nll_fn(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "log_softmax + nll_loss [2048, 32000]", flags, *vocab_nll,
      [&](const Inputs& in) { return nll_fn(in[0].toTensor(), in[1].toTensor()); },
      {vocab_logits, vocab_labels}, 1e-4, 1e-5, false, {}, 2);
  // A mean squared error: a reduction over every dimension after its prologue.
  auto mse_fn = [](const at::Tensor& a, const at::Tensor& b) {
    at::Tensor d = a - b;
    return (d * d).mean();
  };
  auto mse =
      fx::compile(fn([&](const auto& in) { return mse_fn(in[0].toTensor(), in[1].toTensor()); }), options);
  program(
      "((a - b)^2).mean() [4096, 1024]", flags, *mse,
      [&](const Inputs& in) { return mse_fn(in[0].toTensor(), in[1].toTensor()); },
      {big, torch::randn_like(big)}, 1e-4, 1e-5, false, {}, 2);
  // A training step: the forward, the cross-entropy and the backward of a
  // classifier with batch norm, GELU and SiLU, its gradients added to
  // .grad() on each call, as loss.backward() does on the eager side.
  {
    torch::AutoGradMode grad_mode(true);
    torch::nn::Sequential classifier(torch::nn::Linear(784, 1024), torch::nn::BatchNorm1d(1024),
                                     torch::nn::GELU(), torch::nn::Linear(1024, 1024), torch::nn::SiLU(),
                                     torch::nn::Linear(1024, 10));
    auto step_fn = [&](const Inputs& in) {
      at::Tensor loss =
          torch::nn::functional::cross_entropy(classifier->forward(in[0].toTensor()), in[1].toTensor());
      loss.backward();
      return loss;
    };
    auto step = fx::compile_training_step(*classifier, fn(step_fn), options);
    program("training step: MLP classifier [256, 784]", flags, *step, step_fn,
            {torch::randn({256, 784}), torch::randint(10, {256})}, 1e-4, 1e-5, false, {}, 2);
    // The same network compiled as a module and called under autograd: its
    // forward and backward compiled apart, the loss and loss.backward()
    // eager around it.
    auto forward = fx::compile(
        *classifier, fn([&](const auto& in) { return classifier->forward(in[0].toTensor()); }), options);
    auto around = [&](auto&& model) {
      return [&, model](const Inputs& in) -> at::Tensor {
        at::Tensor loss = torch::nn::functional::cross_entropy(model(in[0].toTensor()), in[1].toTensor());
        loss.backward();
        return loss;
      };
    };
    auto eager_model = [&](const at::Tensor& x) { return classifier->forward(x); };
    auto compiled_model = [&](const at::Tensor& x) { return forward->run({x}).toTensor(); };
    program("fx::compile(module) under autograd: MLP classifier [256, 784]", flags,
            Run(around(compiled_model)), around(eager_model),
            {torch::randn({256, 784}), torch::randint(10, {256})}, 1e-4, 1e-5, true, {}, 2);
  }
  std::printf("]}\n");
  std::filesystem::remove_all(options.cache_dir);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "compile_bench: " << e.what() << "\n";
  return 1;
}
