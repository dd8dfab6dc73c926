// pack_weights and unpack_weights alone (src/compile/pack_weights.cpp), and
// a compiled MLP whose weights are packed for MKL once, and again when a
// weight changes (weight_cache_test.cpp compiles a convolution network).
#include "../../src/compile/phases.h"
#include "fresh_options.h"

#include <fx/compile.h>
#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/passes/shape_prop.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using testing::HasSubstr;
using testing::Not;

size_t count_calls(const fx::Graph& g, const std::string& target) {
  size_t n = 0;
  for (const fx::Node* node : g.nodes())
    n += node->op() == fx::Op::call_function && node->target().str() == target;
  return n;
}

const std::string kLinear = "torch.ops.mkl._mkl_linear.default";
const std::string kReorder = "torch.ops.mkl._mkl_reorder_linear_weight.default";
const std::string kConvolution = "torch.ops.mkldnn._convolution_pointwise.default";
const std::string kReorderConvolution = "torch.ops.mkldnn._reorder_convolution_weight.default";

// Products of inputs with transposed weights: two that are packed (one
// packing of `w` serves both), and three that are not: addmm with beta 2,
// a single row, and float64.
struct Products {
  at::Tensor w = torch::randn({5, 4}), b = torch::randn({5}), wd = torch::randn({5, 4}, torch::kDouble);
  at::Tensor x = torch::randn({8, 4}), row = torch::randn({1, 4}), xd = torch::randn({8, 4}, torch::kDouble);
  std::unique_ptr<fx::GraphModule> gm;

  Products() {
    auto g = std::make_unique<fx::Graph>();
    fx::Node* xn = g->placeholder("x");
    fx::Node* rown = g->placeholder("row");
    fx::Node* xdn = g->placeholder("xd");
    fx::Node* wn = g->get_attr("w");
    fx::Node* bn = g->get_attr("b");
    fx::Node* wdn = g->get_attr("wd");
    auto t = [&](fx::Node* m) { return g->call_function("torch.ops.aten.t.default", {m}); };
    fx::Tuple out;
    out.items.push_back(g->call_function("torch.ops.aten.mm.default", {xn, t(wn)}));
    out.items.push_back(g->call_function("torch.ops.aten.addmm.default", {bn, xn, t(wn)}));
    out.items.push_back(
        g->call_function("torch.ops.aten.addmm.default", {bn, xn, t(wn)}, {{"beta", fx::Argument(2.0)}}));
    out.items.push_back(g->call_function("torch.ops.aten.mm.default", {rown, t(wn)}));
    out.items.push_back(g->call_function("torch.ops.aten.mm.default", {xdn, t(wdn)}));
    g->output(out);
    gm = std::make_unique<fx::GraphModule>(
        std::map<std::string, fx::GraphModule::Attr>{{"w", w}, {"b", b}, {"wd", wd}}, std::move(g));
    fx::passes::ShapeProp(*gm).propagate({fx::Value(x), fx::Value(row), fx::Value(xd)});
  }

  void expect_eager() {
    const auto out = gm->run({x, row, xd}).toTupleRef().elements();
    const std::vector<at::Tensor> want{x.mm(w.t()), torch::addmm(b, x, w.t()), torch::addmm(b, x, w.t(), 2.0),
                                       row.mm(w.t()), xd.mm(wd.t())};
    ASSERT_EQ(out.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(at::allclose(out[i].toTensor(), want[i], 1e-5, 1e-6)) << "output " << i;
  }
};

TEST(PackWeights, ProductsOfAFloatWeightAndTwoRowsOrMoreArePacked) {
  if (!at::hasMKL()) GTEST_SKIP() << "LibTorch without MKL";
  Products p;
  EXPECT_EQ(fx::compile_detail::pack_weights(*p.gm), 2u);
  p.gm->recompile();
  const fx::Graph& g = p.gm->graph();
  EXPECT_EQ(count_calls(g, kLinear), 2u) << g.to_string();
  EXPECT_EQ(count_calls(g, kReorder), 1u) << g.to_string();
  EXPECT_EQ(count_calls(g, "torch.ops.aten.addmm.default"), 1u);  // beta = 2
  EXPECT_EQ(count_calls(g, "torch.ops.aten.mm.default"), 2u);     // one row; float64
  EXPECT_THAT(g.to_string(), HasSubstr("torch.ops.mkl._mkl_reorder_linear_weight.default](args = (%w, 8)"));
  p.expect_eager();

  // Undone for a program that keeps nothing between calls.
  fx::compile_detail::unpack_weights(p.gm->graph());
  p.gm->recompile();
  EXPECT_THAT(g.to_string(), Not(HasSubstr("mkl")));
  EXPECT_EQ(count_calls(g, "torch.ops.aten.addmm.default"), 2u);
  EXPECT_EQ(count_calls(g, "torch.ops.aten.mm.default"), 3u);
  p.expect_eager();
}

// A weight made under inference mode has no version counter, so its
// packing would not be kept: it is left as it is.
TEST(PackWeights, InferenceTensorsAreNotPacked) {
  at::Tensor w;
  {
    c10::InferenceMode inference;
    w = torch::randn({5, 4});
  }
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  g->output(g->call_function("torch.ops.aten.mm.default",
                             {x, g->call_function("torch.ops.aten.t.default", {g->get_attr("w")})}));
  fx::GraphModule gm(std::map<std::string, fx::GraphModule::Attr>{{"w", w}}, std::move(g));
  fx::passes::ShapeProp(gm).propagate({fx::Value(torch::randn({8, 4}))});
  EXPECT_EQ(fx::compile_detail::pack_weights(gm), 0u);
}

// Compiled for inference, an MLP's weights are packed once and kept; an
// optimizer-style write or a new tensor is seen.
TEST(PackWeights, ACompiledMlpPacksItsWeightsOnceAndAgainWhenTheyChange) {
  if (!at::hasMKL()) GTEST_SKIP() << "LibTorch without MKL";
  torch::manual_seed(0);
  torch::nn::Linear up(16, 32), down(32, 8);
  torch::nn::Sequential net(up, torch::nn::ReLU(), down);
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({4, 16});
  auto expect_eager = [&](const at::Tensor& in) {
    at::Tensor got = compiled->run({in}).toTensor(), want = net->forward(in);
    EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5)) << (got - want).abs().max().item<float>();
  };
  expect_eager(x);
  expect_eager(x);
  const std::string text = compiled->compiled_graph().graph().to_string();
  EXPECT_EQ(count_calls(compiled->compiled_graph().graph(), kLinear), 2u) << text;
  EXPECT_THAT(text, HasSubstr("call_module[target=cached__mkl_reorder_linear_weight"));
  up->weight.mul_(0.5);
  expect_eager(x);
  down->weight.set_data(torch::randn({8, 32}));
  expect_eager(x);
  // Another row count: a dynamic program, whose products are plain.
  expect_eager(torch::randn({7, 16}));
  EXPECT_EQ(count_calls(compiled->compiled_graph().graph(), kLinear), 0u);
}

// Threads calling one compiled module whose weights are packed: the first
// run packs them (whichever thread comes first), the others read the kept
// packed weights at once. scripts/tsan.sh runs this under ThreadSanitizer.
// (Two convolutions: the layout pass makes them channels_last, the layout
// a packed convolution returns; a single one stays row-major, unpacked.)
TEST(PackWeights, ThreadsShareOnePackedModule) {
  if (!at::hasMKL() || !at::hasMKLDNN()) GTEST_SKIP() << "LibTorch without MKL or oneDNN";
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
                            torch::nn::ReLU(), torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3)),
                            torch::nn::ReLU(), torch::nn::Flatten(), torch::nn::Linear(8 * 6 * 6, 10));
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  // Inputs and outputs made here: LibTorch's generator is made lazily, by
  // whichever thread asks first.
  std::vector<std::pair<at::Tensor, at::Tensor>> work;
  for (int i = 0; i < 40; ++i) {
    at::Tensor x = torch::randn({4, 3, 8, 8});
    work.emplace_back(x, net->forward(x));
  }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      torch::NoGradGuard thread_no_grad;  // grad mode is per thread
      for (size_t i = t; i < work.size(); i += 4)
        if (!at::allclose(compiled->run({work[i].first}).toTensor(), work[i].second, 1e-4, 1e-5)) ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(compiled->num_specializations(), 1u);
  const fx::Graph& g = compiled->compiled_graph().graph();
  EXPECT_EQ(count_calls(g, kLinear), 1u) << g.to_string();
  EXPECT_EQ(count_calls(g, kConvolution), 2u) << g.to_string();
}

// oneDNN's convolution with a packed weight returns channels_last whatever
// its input: a convolution the layout pass leaves row-major (a single one)
// is not packed, so that the flatten after it views its result as captured.
TEST(PackWeights, AConvolutionLeftRowMajorIsNotPacked) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3)), torch::nn::ReLU(),
                            torch::nn::Flatten(), torch::nn::Linear(8 * 6 * 6, 10));
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  for (int call = 0; call < 2; ++call) {  // the second runs the compiled program
    at::Tensor x = torch::randn({4, 3, 8, 8});
    EXPECT_TRUE(at::allclose(compiled->run({x}).toTensor(), net->forward(x), 1e-4, 1e-5));
  }
  const fx::Graph& g = compiled->compiled_graph().graph();
  EXPECT_EQ(count_calls(g, kConvolution), 0u) << g.to_string();
  EXPECT_EQ(count_calls(g, "torch.ops.aten.convolution.default"), 1u) << g.to_string();
}

// Two convolutions: one reads its weight's channels_last copy (layout.cpp)
// and has a bias, one is depthwise without a bias. Both are packed from
// the weight itself; the copy goes.
TEST(PackWeights, ConvolutionsArePackedFromTheWeightItself) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "LibTorch without oneDNN";
  at::Tensor w = torch::randn({8, 4, 3, 3}), b = torch::randn({8}), dw = torch::randn({8, 1, 3, 3});
  at::Tensor x = torch::randn({2, 4, 10, 10}).contiguous(at::MemoryFormat::ChannelsLast);
  auto g = std::make_unique<fx::Graph>();
  fx::Node* xn = g->placeholder("x");
  fx::Node* copy = g->call_function("torch.ops.aten.clone.default", {g->get_attr("w")},
                                    {{"memory_format", fx::Argument(c10::MemoryFormat::ChannelsLast)}});
  auto ints = [](int64_t a, int64_t b) { return fx::Argument(fx::List{{a, b}}); };
  fx::Node* c1 = g->call_function(
      "torch.ops.aten.convolution.default",
      {xn, copy, g->get_attr("b"), ints(1, 1), ints(1, 1), ints(1, 1), false, ints(0, 0), int64_t{1}});
  fx::Node* c2 = g->call_function("torch.ops.aten.convolution.default",
                                  {c1, g->get_attr("dw"), fx::NoneType{}, ints(2, 2), ints(0, 0), ints(1, 1),
                                   false, ints(0, 0), int64_t{8}});
  g->output(c2);
  fx::GraphModule gm(std::map<std::string, fx::GraphModule::Attr>{{"w", w}, {"b", b}, {"dw", dw}},
                     std::move(g));
  fx::passes::ShapeProp(gm).propagate({fx::Value(x)});
  auto reference = [&](const at::Tensor& in) {
    const at::Tensor first = at::convolution(in, w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    return at::convolution(first, dw, std::nullopt, {2, 2}, {0, 0}, {1, 1}, false, {0, 0}, 8);
  };
  const at::Tensor want = reference(x);

  EXPECT_EQ(fx::compile_detail::pack_weights(gm), 2u);
  gm.recompile();
  EXPECT_EQ(count_calls(gm.graph(), kConvolution), 2u) << gm.graph().to_string();
  EXPECT_EQ(count_calls(gm.graph(), kReorderConvolution), 2u);
  EXPECT_THAT(gm.graph().to_string(), Not(HasSubstr("clone")));
  EXPECT_THAT(
      gm.graph().to_string(),
      HasSubstr("torch.ops.mkldnn._reorder_convolution_weight.default](args = (%w, [1, 1], [1, 1], [1, 1], "
                "1, [2, 4, 10, 10])"));
  EXPECT_TRUE(at::allclose(gm.run({x}).toTensor(), want, 1e-4, 1e-5));
  // Any input size: the packing picked a layout, not the sizes.
  at::Tensor big = torch::randn({3, 4, 13, 11});
  EXPECT_TRUE(at::allclose(gm.run({big}).toTensor(), reference(big), 1e-4, 1e-5));

  fx::compile_detail::unpack_weights(gm.graph());
  gm.recompile();
  EXPECT_THAT(gm.graph().to_string(), Not(HasSubstr("mkldnn")));
  EXPECT_EQ(count_calls(gm.graph(), "torch.ops.aten.convolution.default"), 2u);
  EXPECT_TRUE(at::allclose(gm.run({x}).toTensor(), want, 1e-4, 1e-5));
}

}  // namespace
