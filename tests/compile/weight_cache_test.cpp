// cache_weight_computations alone (src/compile/weight_cache.cpp), and a
// compiled network whose convolution weights are copied to channels_last
// once and again when they change.
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

// An operator that counts its CPU calls: how often a weight's value is
// computed.
std::atomic<int> twice_calls{0};
at::Tensor twice_cpu(const at::Tensor& x) {
  ++twice_calls;
  return x * 2;
}
at::Tensor twice_meta(const at::Tensor& x) { return at::empty_like(x); }
TORCH_LIBRARY(fxcpp_weight_cache_test, m) { m.def("twice(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(fxcpp_weight_cache_test, CPU, m) { m.impl("twice", twice_cpu); }
TORCH_LIBRARY_IMPL(fxcpp_weight_cache_test, Meta, m) { m.impl("twice", twice_meta); }
const char* kTwice = "torch.ops.fxcpp_weight_cache_test.twice.default";

// x @ twice(w).t(), and what `extra` adds; tensor_meta from a run, as
// fx::capture records it.
std::unique_ptr<fx::GraphModule> matmul_graph(const at::Tensor& w, const at::Tensor& x,
                                              bool return_weight_value, bool write_count) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* xn = g->placeholder("x");
  fx::Node* wn = g->get_attr("w");
  fx::Node* c = g->call_function(kTwice, {wn});
  fx::Node* t = g->call_function("torch.ops.aten.t.default", {c});
  fx::Node* mm = g->call_function("torch.ops.aten.mm.default", {xn, t});
  fx::Tuple out{{mm}};
  std::map<std::string, fx::GraphModule::Attr> attrs{{"w", w}};
  if (return_weight_value) out.items.push_back(g->call_function(kTwice, {wn}));
  if (write_count) {
    // A buffer the graph updates is no weight: what reads it is not kept.
    fx::Node* count = g->get_attr("count");
    out.items.push_back(
        g->call_function("torch.ops.aten.mul.Tensor", {g->call_function(kTwice, {count}), mm}));
    g->call_function("torch.ops.aten.copy_.default",
                     {count, g->call_function("torch.ops.aten.add.Tensor", {count, 1})});
    attrs.emplace("count", torch::ones({}));
  }
  g->output(out);
  auto gm = std::make_unique<fx::GraphModule>(attrs, std::move(g));
  fx::passes::ShapeProp(*gm).propagate({fx::Value(x)});
  return gm;
}

at::Tensor first(const c10::IValue& v) { return v.toTupleRef().elements()[0].toTensor(); }

TEST(WeightCache, ComputesAWeightsValueOnceUntilTheWeightChanges) {
  at::Tensor w = torch::randn({5, 4}), x = torch::randn({3, 4});
  auto gm = matmul_graph(w, x, false, false);
  ASSERT_EQ(fx::compile_detail::cache_weight_computations(*gm), 1u);
  gm->recompile();
  EXPECT_THAT(
      gm->graph().to_string(),
      HasSubstr("%cached_t_default : [num_users=1] = call_module[target=cached_t_default](args = (%w,), "
                "kwargs = {})"));
  EXPECT_THAT(gm->graph().to_string(), Not(HasSubstr("twice")));

  twice_calls = 0;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::allclose(first(gm->run({x})), x.mm((w * 2).t())));
  EXPECT_EQ(twice_calls, 1);
  // A write to the weight (its version), and a write through a view of it.
  w.add_(1);
  EXPECT_TRUE(at::allclose(first(gm->run({x})), x.mm((w * 2).t())));
  w[0].fill_(3);
  EXPECT_TRUE(at::allclose(first(gm->run({x})), x.mm((w * 2).t())));
  EXPECT_EQ(twice_calls, 3);
  // Under inference mode too, where the kept value is made an ordinary
  // tensor, which calls outside it use as well.
  w.mul_(3);
  {
    c10::InferenceMode inference;
    EXPECT_TRUE(at::allclose(first(gm->run({x})), x.mm((w * 2).t())));
    gm->run({x});
  }
  EXPECT_EQ(twice_calls, 4);
  EXPECT_TRUE(at::allclose(first(gm->run({x})), x.mm((w * 2).t())));
  EXPECT_EQ(twice_calls, 4);
}

TEST(WeightCache, WhatTheGraphReturnsOrWritesIsNotKept) {
  at::Tensor w = torch::randn({5, 4}), x = torch::randn({3, 4});
  auto gm = matmul_graph(w, x, true, true);
  ASSERT_EQ(fx::compile_detail::cache_weight_computations(*gm), 1u);
  gm->recompile();
  const std::string text = gm->graph().to_string();
  // The returned twice(w) and twice(count) run on every call.
  const std::string call = std::string("call_function[target=") + kTwice;
  size_t left = 0;
  for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) ++left;
  EXPECT_EQ(left, 2u) << text;
  twice_calls = 0;
  c10::IValue out = gm->run({x});
  gm->run({x});
  EXPECT_EQ(twice_calls, 1 + 2 * 2);
  // A caller that writes into the returned value changes nothing kept.
  out.toTupleRef().elements()[1].toTensor().zero_();
  EXPECT_TRUE(at::allclose(gm->run({x}).toTupleRef().elements()[1].toTensor(), w * 2));
}

TEST(WeightCache, InliningGivesTheComputationBack) {
  at::Tensor w = torch::randn({5, 4}), x = torch::randn({3, 4});
  auto gm = matmul_graph(w, x, false, false);
  const std::string before = gm->graph().to_string();
  fx::compile_detail::cache_weight_computations(*gm);
  gm->recompile();
  auto inlined = fx::compile_detail::inline_weight_caches(*gm);
  EXPECT_EQ(inlined->graph().to_string(), before);
  EXPECT_TRUE(at::allclose(first(inlined->run({x})), x.mm((w * 2).t())));
  // A deep copy has its own weight and keeps its own value.
  auto copy = gm->deepcopy();
  w.zero_();
  EXPECT_TRUE(at::allclose(first(gm->run({x})), torch::zeros({3, 5})));
  EXPECT_FALSE(at::allclose(first(copy->run({x})), torch::zeros({3, 5})));
}

// Eight threads miss at once, then hit: each gets the right value.
TEST(WeightCache, ThreadsShareOneCache) {
  at::Tensor w = torch::randn({64, 32}), x = torch::randn({16, 32});
  auto gm = matmul_graph(w, x, false, false);
  fx::compile_detail::cache_weight_computations(*gm);
  gm->recompile();
  const at::Tensor want = x.mm((w * 2).t());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) wrong += !at::allclose(first(gm->run({x})), want);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
}

// A network of convolutions compiled channels_last: each weight is copied
// to channels_last once, kept, and copied again when it changes.
TEST(WeightCache, ConvolutionWeightsAreCopiedToChannelsLastOnce) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv1(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
      conv2(torch::nn::Conv2dOptions(8, 8, 3));
  torch::nn::BatchNorm2d bn(8);
  torch::nn::Sequential net(conv1, bn, torch::nn::ReLU(), conv2, torch::nn::ReLU());
  net->eval();
  torch::NoGradGuard no_grad;
  bn->running_var.uniform_(0.5, 2);
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({1, 3, 16, 16});
  auto expect_eager = [&] {
    at::Tensor got = compiled->run({x}).toTensor(), want = net->forward(x);
    EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5)) << (got - want).abs().max().item<float>();
  };
  expect_eager();
  expect_eager();
  const std::string text = compiled->compiled_graph().graph().to_string();
  // Both weights (a batch of one holds fewer elements than they do) and
  // the batch norm's scale are kept.
  size_t kept = 0;
  for (fx::Node* n : compiled->compiled_graph().graph().nodes()) kept += n->op() == fx::Op::call_module;
  EXPECT_GE(kept, 3u) << text;
  // Copied to channels_last, or packed for oneDNN (pack_weights_test.cpp
  // tests the phase alone).
  EXPECT_THAT(text, HasSubstr(at::hasMKLDNN() ? "call_module[target=cached__reorder_convolution_weight"
                                              : "call_module[target=cached_clone"));
  // An optimizer's in-place step, a new running variance, a new weight.
  conv1->weight.mul_(0.5);
  expect_eager();
  bn->running_var.copy_(torch::rand({8}) + 0.5);
  expect_eager();
  conv2->weight.set_data(torch::randn({8, 8, 3, 3}));
  expect_eager();
}

}  // namespace
