// Benchmarks of fxcpp's graph core, the same workloads as fx_graph_bench.py
// runs in torch.fx (bench/run_graph_bench.sh prints them side by side).
//
// Every workload takes N, the number of call_function nodes:
//   build               placeholder x, N chained operator.add(prev, 1), output
//   iterate             walk g.nodes() of a prebuilt chain, touching each node's op
//   python_code         g.python_code().src of a prebuilt chain
//   build_python_code   build + python_code (the headline)
//   replace_all_uses    x used by N nodes add(x, i): x.replace_all_uses_with(y)
//   eliminate_dead_code N dead nodes add(x, i), output returns x: DCE only
//   graph_copy          copy a prebuilt chain into a new Graph with a value map
//
// All nodes get the default names (add, add_1, add_2, ...): many nodes
// share the base name `add`, which made torch.fx 1.13's naming quadratic
// (2.x keeps a count per base name).
//
// Only the operation itself is timed (manual timing): building the input
// graph and destroying the graphs are outside the timed region. Each
// benchmark first runs its workload once untimed, so that the timed runs
// find the allocator warm: in the VM this was measured on, a page fault
// costs ~12 us, and a cold run at N=1M spends most of its time faulting.

#include <benchmark/benchmark.h>
#include <fx/fx.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace {

using Clock = std::chrono::steady_clock;

const fx::Target& add_target() {
  static const fx::Target t("operator.add");
  return t;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// x -> add -> add_1 -> ... -> add_{n-1} -> output
std::unique_ptr<fx::Graph> build_chain(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  const fx::Target& add = add_target();
  for (int64_t i = 0; i < n; ++i) prev = g->call_function(add, {prev, 1});
  g->output(prev);
  return g;
}

// x, y; add(x, 0), add_1(x, 1), ..., add_{n-1}(x, n-1); output(last).
// Every add uses x; y is defined before all of them.
std::unique_ptr<fx::Graph> build_fan_out(int64_t n, fx::Node** x, fx::Node** y) {
  auto g = std::make_unique<fx::Graph>();
  *x = g->placeholder("x");
  *y = g->placeholder("y");
  const fx::Target& add = add_target();
  fx::Node* last = *x;
  for (int64_t i = 0; i < n; ++i) last = g->call_function(add, {*x, i});
  g->output(last);
  return g;
}

// x; add(x, 0), ..., add_{n-1}(x, n-1); output(x): every add is dead.
std::unique_ptr<fx::Graph> build_dead(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  const fx::Target& add = add_target();
  for (int64_t i = 0; i < n; ++i) g->call_function(add, {x, i});
  g->output(x);
  return g;
}

void set_counters(benchmark::State& state) {
  state.counters["N"] = static_cast<double>(state.range(0));
}

void BM_build(benchmark::State& state) {
  const int64_t n = state.range(0);
  build_chain(n);  // warm-up
  for (auto _ : state) {
    auto start = Clock::now();
    auto g = build_chain(n);
    state.SetIterationTime(seconds_since(start));
    benchmark::DoNotOptimize(g->size());
  }
  set_counters(state);
}

void BM_iterate(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto g = build_chain(n);
  for (auto _ : state) {
    int64_t s = 0;
    for (fx::Node* node : g->nodes()) s += node->op() == fx::Op::call_function;
    benchmark::DoNotOptimize(s);
    if (s != n) state.SkipWithError("wrong node count");
  }
  set_counters(state);
  state.counters["nodes_per_s"] =
      benchmark::Counter(static_cast<double>(g->size()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_python_code(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto g = build_chain(n);
  g->python_code();  // warm-up
  for (auto _ : state) {
    std::string src = g->python_code().src;
    benchmark::DoNotOptimize(src.data());
  }
  set_counters(state);
}

void BM_build_python_code(benchmark::State& state) {
  const int64_t n = state.range(0);
  build_chain(n)->python_code();  // warm-up
  for (auto _ : state) {
    auto start = Clock::now();
    auto g = build_chain(n);
    std::string src = g->python_code().src;
    benchmark::DoNotOptimize(src.data());
    state.SetIterationTime(seconds_since(start));
  }
  set_counters(state);
}

void BM_replace_all_uses(benchmark::State& state) {
  const int64_t n = state.range(0);
  {  // warm-up
    fx::Node *x = nullptr, *y = nullptr;
    auto g = build_fan_out(n, &x, &y);
    x->replace_all_uses_with(y);
  }
  for (auto _ : state) {
    fx::Node *x = nullptr, *y = nullptr;
    auto g = build_fan_out(n, &x, &y);
    auto start = Clock::now();
    auto changed = x->replace_all_uses_with(y);
    state.SetIterationTime(seconds_since(start));
    if (static_cast<int64_t>(changed.size()) != n || x->num_users() != 0)
      state.SkipWithError("replace_all_uses_with changed the wrong users");
  }
  set_counters(state);
}

void BM_eliminate_dead_code(benchmark::State& state) {
  const int64_t n = state.range(0);
  build_dead(n)->eliminate_dead_code();  // warm-up
  for (auto _ : state) {
    auto g = build_dead(n);
    auto start = Clock::now();
    bool changed = g->eliminate_dead_code();
    state.SetIterationTime(seconds_since(start));
    if (!changed || g->size() != 2) state.SkipWithError("dead code was not eliminated");
  }
  set_counters(state);
}

void BM_graph_copy(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto src = build_chain(n);
  {  // warm-up
    fx::Graph dst;
    std::unordered_map<const fx::Node*, fx::Node*> val_map;
    dst.output(dst.graph_copy(*src, val_map));
  }
  for (auto _ : state) {
    auto start = Clock::now();
    auto dst = std::make_unique<fx::Graph>();
    std::unordered_map<const fx::Node*, fx::Node*> val_map;
    fx::Argument out = dst->graph_copy(*src, val_map);
    dst->output(out);
    state.SetIterationTime(seconds_since(start));
    if (dst->size() != src->size()) state.SkipWithError("graph_copy lost nodes");
    // dst and val_map are destroyed outside the timed region.
  }
  set_counters(state);
}

// Each size runs for at least kMinTime seconds of timed work; iterations are
// chosen by the library. Untimed setup (building inputs, destroying graphs)
// adds to the wall time of the manually timed workloads.
constexpr double kMinTime = 0.2;

#define FX_GRAPH_BENCH(fn)                                                                        \
  BENCHMARK(fn)->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond) \
      ->MinTime(kMinTime)

// iterate and python_code have nothing to exclude and use plain wall-clock
// timing; the others exclude setup or teardown with manual timing.
FX_GRAPH_BENCH(BM_build)->UseManualTime();
FX_GRAPH_BENCH(BM_iterate);
FX_GRAPH_BENCH(BM_python_code);
FX_GRAPH_BENCH(BM_build_python_code)->UseManualTime();
FX_GRAPH_BENCH(BM_replace_all_uses)->UseManualTime();
FX_GRAPH_BENCH(BM_eliminate_dead_code)->UseManualTime();
FX_GRAPH_BENCH(BM_graph_copy)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
