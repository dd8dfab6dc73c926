// Benchmarks of running and tracing: fxcpp against LibTorch called by hand
// (in this file) and against torch.fx / TorchScript (fx_exec_bench.py, run
// beside it by run_exec_bench.sh, which prints the ratios).
//
// Execution overhead: one graph of N tiny ops on a 4x4 float tensor x, a
// chain prev = op(prev, ...) cycling through ten ops that mix the three kinds
// of targets a traced graph holds:
//   torch.add(prev, x)      operator.mul(prev, 0.5)   torch.relu(prev)
//   prev.neg()              torch.sigmoid(prev)       operator.add(prev, x)
//   prev.mul(x)             torch.neg(prev)           prev.relu()
//   prev.sigmoid()
// (the values stay in (-1, 2): no overflow, no denormals). Timed:
//   exec_handwritten   the same ATen calls written out in C++ (the floor)
//   exec_graph_module  fx::GraphModule::run on the compiled plan
//   exec_interpreter   fx::Interpreter, node by node (for reference)
// Each checks once, before timing, that it computes what the handwritten
// chain computes.
//
// Tracing: an MLP of N layers, each fx::nn::Linear(8, 8) then fx::nn::ReLU,
// in an fx::nn::Sequential (torch.nn.Sequential in the Python original):
//   trace_mlp           fx::Tracer().trace(model): the graph only
//   symbolic_trace_mlp  fx::symbolic_trace(model): graph + GraphModule
//                       (attributes, code, compiled plan)
// and torchvision's resnet50 (fx::models::resnet50, the port in models/):
//   trace_resnet50, symbolic_trace_resnet50 (N = 1: one model)
// and a chain x + c_i over N tensors that are not attributes of the model,
// which tracing names `_tensor_constant0` ... on a fresh model each time:
//   symbolic_trace_constants
// Building the models is outside the timed region.

#include <benchmark/benchmark.h>
#include <fx/fx.h>
#include <fx/models/resnet.h>
#include <fx/nn.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tiny_chain.h"

namespace {

using fxbench::handwritten;
using fxbench::kOps;

// The chain of N ops as a graph: placeholder x, N nodes, output.
std::unique_ptr<fx::Graph> build_exec_graph(int64_t n) {
  static const fx::Target torch_add("torch.add"), torch_relu("torch.relu"), torch_sigmoid("torch.sigmoid"),
      torch_neg("torch.neg"), op_mul("operator.mul"), op_add("operator.add");
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* prev = x;
  for (int64_t i = 0; i < n; ++i) {
    switch (i % kOps) {
      case 0:
        prev = g->call_function(torch_add, {prev, x});
        break;
      case 1:
        prev = g->call_function(op_mul, {prev, 0.5});
        break;
      case 2:
        prev = g->call_function(torch_relu, {prev});
        break;
      case 3:
        prev = g->call_method("neg", {prev});
        break;
      case 4:
        prev = g->call_function(torch_sigmoid, {prev});
        break;
      case 5:
        prev = g->call_function(op_add, {prev, x});
        break;
      case 6:
        prev = g->call_method("mul", {prev, x});
        break;
      case 7:
        prev = g->call_function(torch_neg, {prev});
        break;
      case 8:
        prev = g->call_method("relu", {prev});
        break;
      case 9:
        prev = g->call_method("sigmoid", {prev});
        break;
    }
  }
  g->output(prev);
  return g;
}

at::Tensor input() {
  torch::manual_seed(0);
  return torch::rand({4, 4}) * 2 - 1;
}

// The root a GraphModule copies attributes from: the chain has none.
class EmptyRoot final : public fx::Module {
 public:
  EmptyRoot() : fx::Module("Chain", {"x"}) {}
  fx::Value forward(const std::vector<fx::Value>&) override {
    throw fx::Error("EmptyRoot has no forward of its own");
  }
};

std::unique_ptr<fx::GraphModule> exec_module(int64_t n) {
  EmptyRoot root;
  return std::make_unique<fx::GraphModule>(root, build_exec_graph(n), "Chain");
}

bool same_as_handwritten(const at::Tensor& got, const at::Tensor& x, int64_t n) {
  return got.defined() && torch::equal(got, handwritten(x, n));
}

void set_counters(benchmark::State& state) {
  state.counters["N"] = static_cast<double>(state.range(0));
  state.counters["ns_per_op"] =
      benchmark::Counter(static_cast<double>(state.range(0)),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_exec_handwritten(benchmark::State& state) {
  const int64_t n = state.range(0);
  at::Tensor x = input();
  for (auto _ : state) {
    at::Tensor y = handwritten(x, n);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_counters(state);
}

void BM_exec_graph_module(benchmark::State& state) {
  const int64_t n = state.range(0);
  at::Tensor x = input();
  auto gm = exec_module(n);
  if (!same_as_handwritten(gm->run({x}).toTensor(), x, n))
    state.SkipWithError("GraphModule computed another result");
  for (auto _ : state) {
    c10::IValue y = gm->run({x});
    benchmark::DoNotOptimize(y.toTensor().data_ptr());
  }
  set_counters(state);
}

void BM_exec_interpreter(benchmark::State& state) {
  const int64_t n = state.range(0);
  at::Tensor x = input();
  auto gm = exec_module(n);
  fx::Interpreter interp(*gm);
  if (!same_as_handwritten(interp.run({fx::Value(x)}).tensor(), x, n))
    state.SkipWithError("Interpreter computed another result");
  for (auto _ : state) {
    fx::Value y = interp.run({fx::Value(x)});
    benchmark::DoNotOptimize(y.tensor().data_ptr());
  }
  set_counters(state);
}

// ---- tracing ------------------------------------------------------------------

std::shared_ptr<fx::nn::Sequential> mlp(int64_t layers) {
  static std::map<int64_t, std::shared_ptr<fx::nn::Sequential>> built;  // built once per size
  auto& m = built[layers];
  if (!m) {
    m = std::make_shared<fx::nn::Sequential>();
    for (int64_t i = 0; i < layers; ++i) {
      m->append(std::make_shared<fx::nn::Linear>(8, 8));
      m->append(std::make_shared<fx::nn::ReLU>());
    }
  }
  return m;
}

void set_layer_counters(benchmark::State& state) {
  state.counters["N"] = static_cast<double>(state.range(0));
  state.counters["ns_per_layer"] =
      benchmark::Counter(static_cast<double>(state.range(0)),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_trace_mlp(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto model = mlp(n);
  for (auto _ : state) {
    fx::Tracer tracer;
    auto g = tracer.trace(*model);
    if (g->size() != static_cast<size_t>(2 * n + 2)) state.SkipWithError("wrong node count");
    state.PauseTiming();  // the graph is destroyed outside the timed region
    g.reset();
    state.ResumeTiming();
  }
  set_layer_counters(state);
}

void BM_symbolic_trace_mlp(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto model = mlp(n);
  for (auto _ : state) {
    auto gm = fx::symbolic_trace(*model);
    if (gm->graph().size() != static_cast<size_t>(2 * n + 2)) state.SkipWithError("wrong node count");
    state.PauseTiming();
    gm.reset();
    state.ResumeTiming();
  }
  set_layer_counters(state);
}

void BM_trace_resnet50(benchmark::State& state) {
  static const auto model = fx::models::resnet50();
  for (auto _ : state) {
    fx::Tracer tracer;
    auto g = tracer.trace(*model);
    benchmark::DoNotOptimize(g->size());
    state.PauseTiming();
    g.reset();
    state.ResumeTiming();
  }
}

void BM_symbolic_trace_resnet50(benchmark::State& state) {
  static const auto model = fx::models::resnet50();
  for (auto _ : state) {
    auto gm = fx::symbolic_trace(*model);
    benchmark::DoNotOptimize(gm->graph().size());
    state.PauseTiming();
    gm.reset();
    state.ResumeTiming();
  }
}

// forward adds N tensors that are no attributes: each becomes a
// `_tensor_constantN` of the root.
struct Constants : fx::Module {
  std::vector<at::Tensor> c;
  explicit Constants(int64_t n) : fx::Module("Constants", {"x"}) {
    for (int64_t i = 0; i < n; ++i) c.push_back(torch::full({2}, static_cast<double>(i)));
  }
  fx::Value forward(const std::vector<fx::Value>& in) override {
    fx::Value x = in[0];
    for (const auto& t : c) x = x + t;
    return x;
  }
};

void BM_symbolic_trace_constants(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();  // a fresh model: tracing stores the names on it
    auto model = std::make_unique<Constants>(n);
    state.ResumeTiming();
    auto gm = fx::symbolic_trace(*model);
    if (gm->graph().size() != static_cast<size_t>(2 * n + 2)) state.SkipWithError("wrong node count");
    state.PauseTiming();
    gm.reset();
    model.reset();
    state.ResumeTiming();
  }
}

BENCHMARK(BM_exec_handwritten)->Arg(1000)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_exec_graph_module)->Arg(1000)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_exec_interpreter)->Arg(1000)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_trace_mlp)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_symbolic_trace_mlp)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_trace_resnet50)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_symbolic_trace_resnet50)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_symbolic_trace_constants)->Arg(1000)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
