// Benchmarks of fxcpp's passes, the same workloads as fx_passes_bench.py runs
// with torch.fx's own passes (bench/run_passes_bench.sh prints them side by
// side). N is the number of call_function nodes:
//   dce             N/2 chained add(prev, 1), each followed by an unused
//                   mul(add, 2): eliminate_dead_code(graph) removes N/2
//                   nodes (as torch.fx's Graph.eliminate_dead_code: no
//                   recompile)
//   cse             N/3 rounds of a = add(prev, 1); b = add(prev, 1);
//                   prev = mul(a, b): the "cse" pass merges every b into its
//                   a and recompiles gm (torch.fx's CSEPass returns a new
//                   GraphModule with its code generated)
//   replace_pattern N/2 rounds of add(prev, 1) then torch.relu:
//                   replace_pattern(gm, relu(x + 1) -> sigmoid(x + 1))
//   split_module    N chained add(prev, 1) split into partitions of 1,000
//                   nodes by a callback
//   shape_prop      N chained add(prev, 1) on a 4x4 float tensor: the
//                   "shape_prop" pass (ShapeProp(gm).propagate(x))
//   shape_prop_floor the same N adds written by hand in LibTorch (y = y + 1),
//                   no graph: what running the operations alone costs, so
//                   the best ratio any ShapeProp that runs them can reach
// Graphs are built and destroyed outside the timed region; each workload
// runs once untimed first (a page fault costs ~12 us in this VM).

#include <benchmark/benchmark.h>
#include <fx/fx.h>
#include <fx/passes/dead_code_elimination.h>
#include <fx/passes/pass_registry.h>
#include <fx/passes/split_module.h>
#include <fx/subgraph_rewriter.h>
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<fx::GraphModule> module(std::unique_ptr<fx::Graph> g) {
  return std::make_unique<fx::GraphModule>(std::map<std::string, fx::GraphModule::Attr>{}, std::move(g));
}

std::unique_ptr<fx::Graph> chain(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  const fx::Target add("operator.add");
  for (int64_t i = 0; i < n; ++i) prev = g->call_function(add, {prev, 1});
  g->output(prev);
  return g;
}

std::unique_ptr<fx::GraphModule> dce_input(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  const fx::Target add("operator.add"), mul("operator.mul");
  for (int64_t i = 0; i < n / 2; ++i) {
    prev = g->call_function(add, {prev, 1});
    g->call_function(mul, {prev, 2});
  }
  g->output(prev);
  return module(std::move(g));
}

std::unique_ptr<fx::GraphModule> cse_input(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  const fx::Target add("operator.add"), mul("operator.mul");
  for (int64_t i = 0; i < n / 3; ++i) {
    fx::Node* a = g->call_function(add, {prev, 1});
    fx::Node* b = g->call_function(add, {prev, 1});
    prev = g->call_function(mul, {a, b});
  }
  g->output(prev);
  return module(std::move(g));
}

std::unique_ptr<fx::GraphModule> add_relu_input(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  const fx::Target add("operator.add"), relu("torch.relu");
  for (int64_t i = 0; i < n / 2; ++i) {
    prev = g->call_function(add, {prev, 1});
    prev = g->call_function(relu, {prev});
  }
  g->output(prev);
  return module(std::move(g));
}

void set_counters(benchmark::State& state) { state.counters["N"] = static_cast<double>(state.range(0)); }

// Times `run` on a fresh input from `make` per iteration.
template <class Make, class Run>
void timed(benchmark::State& state, Make make, Run run) {
  const int64_t n = state.range(0);
  {
    auto warm = make(n);
    run(*warm, n);
  }
  for (auto _ : state) {
    auto input = make(n);
    auto start = Clock::now();
    run(*input, n);
    state.SetIterationTime(seconds_since(start));
  }
  set_counters(state);
}

void BM_dce(benchmark::State& state) {
  timed(state, dce_input, [&](fx::GraphModule& gm, int64_t n) {
    if (!fx::passes::eliminate_dead_code(gm.graph()) || gm.graph().size() != static_cast<size_t>(n / 2 + 2))
      state.SkipWithError("dce removed the wrong nodes");
  });
}

void BM_cse(benchmark::State& state) {
  const auto& cse = fx::passes::find_pass("cse");
  timed(state, cse_input, [&](fx::GraphModule& gm, int64_t n) {
    // The pass recompiles gm when it changed it, as torch.fx's CSEPass
    // generates the code of the GraphModule it returns.
    if (!cse.run(gm, {}) || gm.graph().size() != static_cast<size_t>(2 * (n / 3) + 2))
      state.SkipWithError("cse merged the wrong nodes");
  });
}

void BM_replace_pattern(benchmark::State& state) {
  fx::Pattern pattern({"x"}, [](const std::vector<fx::Value>& a) { return fx::call("torch.relu", a[0] + 1); });
  fx::Pattern replacement({"x"},
                          [](const std::vector<fx::Value>& a) { return fx::call("torch.sigmoid", a[0] + 1); });
  timed(state, add_relu_input, [&](fx::GraphModule& gm, int64_t n) {
    if (static_cast<int64_t>(fx::replace_pattern(gm, pattern, replacement).size()) != n / 2)
      state.SkipWithError("replace_pattern found the wrong matches");
  });
}

void BM_split_module(benchmark::State& state) {
  constexpr int64_t kPartition = 1000;
  timed(
      state, [](int64_t n) { return module(chain(n)); },
      [&](fx::GraphModule& gm, int64_t n) {
        std::unordered_map<const fx::Node*, int64_t> part;
        int64_t i = 0;
        for (fx::Node* node : gm.graph().nodes()) part[node] = i++ / kPartition;
        auto split = fx::passes::split_module(gm, gm, [&](fx::Node* node) { return part.at(node); });
        if (static_cast<int64_t>(split->children().size()) != (n + kPartition) / kPartition)
          state.SkipWithError("split_module made the wrong partitions");
      });
}

void BM_shape_prop(benchmark::State& state) {
  const auto& shape_prop = fx::passes::find_pass("shape_prop");
  fx::passes::PassContext context{{torch::rand({4, 4})}};
  timed(
      state, [](int64_t n) { return module(chain(n)); },
      [&](fx::GraphModule& gm, int64_t) {
        shape_prop.run(gm, context);
        if (!gm.graph().output_node()->args()[0].node()->meta().contains("tensor_meta"))
          state.SkipWithError("shape_prop recorded no tensor_meta");
      });
}

void BM_shape_prop_floor(benchmark::State& state) {
  const at::Tensor x = torch::rand({4, 4});
  timed(
      state, [&](int64_t) { return std::make_unique<at::Tensor>(x); },
      [&](at::Tensor& y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y = y + 1;
        benchmark::DoNotOptimize(y.data_ptr());
      });
}

#define FX_PASSES_BENCH(fn) \
  BENCHMARK(fn)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(0.2)->UseManualTime()

FX_PASSES_BENCH(BM_dce);
FX_PASSES_BENCH(BM_cse);
FX_PASSES_BENCH(BM_replace_pattern);
FX_PASSES_BENCH(BM_split_module);
FX_PASSES_BENCH(BM_shape_prop);
FX_PASSES_BENCH(BM_shape_prop_floor);

}  // namespace

BENCHMARK_MAIN();
