// One const graph read by many threads at once: printing, linting, code
// generation, find_nodes, last_uses, positions and running its GraphModule.
// Const methods keep no scratch state in the nodes (analyses index side
// arrays by Node::index()), so the threads never write shared memory. Run
// under ThreadSanitizer by scripts/tsan.sh; here, every thread must see
// exactly what one thread sees.
#include <fx/graph.h>
#include <fx/graph_module.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

std::unique_ptr<fx::GraphModule> chain(int layers) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w = g->get_attr("w");
  fx::Node* h = x;
  for (int i = 0; i < layers; ++i) {
    fx::Node* a = g->call_function("torch.add", {h, w});
    fx::Node* r = g->call_function("torch.relu", {a});
    h = g->call_method("mul", {r, 0.5});
  }
  g->output(g->call_function("torch.sum", {h}));
  return std::make_unique<fx::GraphModule>(std::map<std::string, fx::GraphModule::Attr>{{"w", torch::ones({4})}},
                                           std::move(g));
}

TEST(ConcurrentReaders, EightThreadsReadOneConstGraph) {
  at::set_num_threads(1);  // the kernels' own pool is not under test
  auto gm = chain(64);
  const fx::Graph& g = gm->graph();
  const auto x = torch::randn({4});
  const std::string text = g.to_string();
  const std::string code = g.python_code("self").src;
  const size_t adds = g.find_nodes(fx::Op::call_function, fx::Target("torch.add")).size();
  const double expected = gm->run({x}).toTensor().item<double>();

  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::vector<fx::Node*> order = g.nodes().to_vector();
        switch ((t + i) % 5) {
          case 0:
            if (g.to_string() != text) ++mismatches;
            break;
          case 1:
            g.lint();
            break;
          case 2:
            if (g.python_code("self", order, g.last_uses(order)).src != code) ++mismatches;
            break;
          case 3: {
            const auto pos = g.positions(order);
            for (size_t k = 0; k < order.size(); ++k)
              if (pos.of(order[k]) != k) ++mismatches;
            if (g.find_nodes(fx::Op::call_function, fx::Target("torch.add")).size() != adds) ++mismatches;
            break;
          }
          case 4:
            if (gm->run({x}).toTensor().item<double>() != expected) ++mismatches;
            break;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace

// Graphs made and destroyed on eight threads at once: their node blocks come
// from and go back to one process-wide store (src/ir/block_memory.cpp), so
// each thread's graphs must still be exactly what one thread builds.
TEST(ConcurrentGraphs, EightThreadsMakeAndDestroyGraphsThatShareBlockMemory) {
  auto build = [](int n) {
    auto g = std::make_unique<fx::Graph>();
    fx::Node* prev = g->placeholder("x");
    for (int i = 0; i < n; ++i) prev = g->call_function("operator.add", {prev, i});
    g->output(prev);
    return g;
  };
  const std::string expected = build(3000)->python_code().src;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int round = 0; round < 6; ++round)
        if (build(3000)->python_code().src != expected) ++wrong;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}
