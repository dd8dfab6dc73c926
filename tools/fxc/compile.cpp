// fxc compile FILE --inputs IN.pt [--output OUT.pt] [--debug DIR] [--emit DIR [--class-name N]] [-n RUNS]:
// fx::compile of a GraphModule file or a .pt2, checked against the file run as
// it is; --emit writes the compiled program as a C++ project.
#include <fx/compile.h>
#include <fx/error.h>
#include <fx/passes/pass_manager.h>
#include <fx/state_dict.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "commands.h"

namespace fxc {

namespace {

double median_ms(size_t runs, const std::function<void()>& body) {
  std::vector<double> ms;
  for (size_t i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int compile(const CommandLine& cl) {
  const size_t runs = cl.count("-n", "20");
  Program program = load_program(cl.positional(0));
  std::vector<c10::IValue> inputs = program.read_inputs(cl.option("--inputs"));
  fx::CompileOptions options;
  options.debug_dir = cl.option_or("--debug", "");
  torch::NoGradGuard no_grad;
  // A .pt2 compiles as the program runs (state fed, mutations written back),
  // captured through the dispatcher like any LibTorch code.
  auto compiled =
      program.exported
          ? fx::compile([&](const std::vector<c10::IValue>& in) { return program.run(in); }, options)
          : fx::compile(*program.module, options);
  const auto start = std::chrono::steady_clock::now();
  compiled->run(inputs);  // compiles; the code runs eagerly while it is captured
  const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c10::IValue out = compiled->run(inputs);
  if (auto d = fx::passes::first_difference(program.run(inputs), out, 1e-4, 1e-5))
    throw fx::Error("the compiled module's outputs differ from the module's: " + *d);
  const fx::CompileReport& r = compiled->report();
  std::printf("%zu kernels (%zu ATen nodes fused), %zu ATen calls left; first call %.2f s (build: %s)\n",
              r.kernels, r.fused_nodes, r.extern_nodes, first_s,
              r.library.empty() ? "nothing to build"
              : r.cache_hit     ? "cached"
                                : "built");
  if (!r.library.empty()) std::printf("library: %s\n", r.library.c_str());
  std::printf("phases:");
  for (const auto& [name, ms] : r.phase_ms) std::printf(" %s %.1f ms,", name.c_str(), ms);
  std::printf("\n");
  const double interpreted = median_ms(runs, [&] { program.run(inputs); });
  const double fused = median_ms(runs, [&] { compiled->run(inputs); });
  std::printf("median of %zu runs: GraphModule %.3f ms, compiled %.3f ms (%.2fx)\n", runs, interpreted, fused,
              interpreted / fused);
  if (cl.has("--output")) fx::save_values(output_values(out), cl.option("--output"));
  if (cl.has("--emit")) {
    compiled->export_cpp(cl.option("--emit"), {.class_name = cl.option_or("--class-name", "FxModule")});
    std::printf("wrote the C++ project %s (kernels.cpp, forward.cpp, weights.pt, CMakeLists.txt)\n",
                cl.option("--emit").c_str());
  }
  return 0;
}

}  // namespace fxc
