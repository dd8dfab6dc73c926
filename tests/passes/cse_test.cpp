// fx::passes::CSEPass / cse against torch.fx 1.13's CSEPass (cse_oracle.py,
// same models in Python), outputs allclose before and after.
#include <fx/fx.h>
#include <fx/nn.h>
#include <fx/passes/cse.h>

#include <iostream>

#include "simplify_test_util.h"

namespace {

using fx::kw;
using fx::Value;
using simplify_test::oracle;

struct Dup : fx::Module {
  std::shared_ptr<fx::nn::Linear> lin;
  Dup() : fx::Module("Dup", {"x", "y"}) {
    lin = register_module("lin", std::make_shared<fx::nn::Linear>(4, 4));
  }
  Value forward(const std::vector<Value>& in) override {
    const Value &x = in[0], &y = in[1];
    Value a = x + y, b = x + y;
    Value c = fx::call("torch.relu", a), d = fx::call("torch.relu", b);
    Value e = x.sum(kw("dim", 1)), f = x.sum(kw("dim", 1));
    Value g = (*lin)(x), h = (*lin)(x);
    Value i = x + 1, j = x + 2;
    Value k = fx::call("torch.cat", Value::list({a, b}), 1),
          m = fx::call("torch.cat", Value::list({b, a}), 1);
    Value n = x.transpose(0, 1), o = x.transpose(1, 0);
    return Value::tuple({c + d, e * f, g - h, i, j, k, m, n, o});
  }
};

struct Random : fx::Module {
  Random() : fx::Module("Random") {}
  Value forward(const std::vector<Value>& in) override {
    const Value& x = in[0];
    Value a = fx::call("torch.randn_like", x), b = fx::call("torch.randn_like", x);
    Value c = x * 2, d = x * 2;
    return a + b + c + d;
  }
};

struct Mutated : fx::Module {
  Mutated() : fx::Module("Mutated") {}
  Value forward(const std::vector<Value>& in) override {
    Value y = in[0].clone();
    Value a = y + 1;
    y.call_method("add_", {1});
    Value b = y + 1;
    return a * b;
  }
};

TEST(CSE, MergesAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  Dup model;
  auto gm = fx::symbolic_trace(model);
  ASSERT_EQ(gm->graph().to_string(), oracle("Dup", "before"));
  std::string code_before = gm->code();
  at::Tensor x = torch::rand({4, 4}), y = torch::rand({4, 4});
  c10::IValue before = gm->run({x, y});

  fx::passes::CSEPass::Result r = fx::passes::CSEPass()(*gm);
  ASSERT_TRUE(r.graph_module);
  EXPECT_TRUE(r.modified);
  EXPECT_EQ(r.graph_module->graph().to_string(), oracle("Dup", "graph"));
  EXPECT_EQ(r.graph_module->code(), oracle("Dup", "code"));
  r.graph_module->graph().lint();
  simplify_test::expect_allclose(before, r.graph_module->run({x, y}));
  // The input module is left as it was, and shares its submodules with the result.
  EXPECT_EQ(gm->code(), code_before);
  EXPECT_EQ(gm->get_submodule("lin"), r.graph_module->get_submodule("lin"));

  // In place: the same graph; a second run finds nothing.
  EXPECT_TRUE(fx::passes::cse(*gm));
  EXPECT_EQ(gm->graph().to_string(), oracle("Dup", "graph"));
  EXPECT_FALSE(fx::passes::cse(*gm));
  EXPECT_FALSE(fx::passes::CSEPass()(*gm).modified);
}

// CSEPass reduces a copy of the graph: the module it was copied from says
// which calls are random (a Dropout while training).
TEST(CSE, CSEPassAsksTheModuleWhichCallsAreRandom) {
  struct TwoDropouts : fx::Module {
    std::shared_ptr<fx::nn::Dropout> drop;
    TwoDropouts() : fx::Module("TwoDropouts") {
      drop = register_module("drop", std::make_shared<fx::nn::Dropout>(0.5));
    }
    fx::Value forward(const std::vector<fx::Value>& in) override { return (*drop)(in[0]) + (*drop)(in[0]); }
  };
  TwoDropouts model;
  auto gm = fx::symbolic_trace(model);
  const size_t nodes = gm->graph().size();
  fx::passes::CSEPass::Result training = fx::passes::CSEPass()(*gm);
  EXPECT_FALSE(training.modified);
  EXPECT_EQ(training.graph_module->graph().size(), nodes);
  model.eval();
  auto eval_gm = fx::symbolic_trace(model);
  fx::passes::CSEPass::Result eval = fx::passes::CSEPass()(*eval_gm);
  EXPECT_TRUE(eval.modified);
  EXPECT_EQ(eval.graph_module->graph().size(), nodes - 1);
  EXPECT_EQ(eval.graph_module->graph().owning_module(), eval.graph_module.get());
}

TEST(CSE, NeverMergesRandomCalls) {
  SKIP_WITHOUT_ORACLE();
  Random model;
  auto gm = fx::symbolic_trace(model);
  ASSERT_EQ(gm->graph().to_string(), oracle("Random", "before"));
  EXPECT_EQ(fx::passes::cse(*gm), simplify_test::oracle_flag("Random", "modified"));
  // torch.fx merges the two randn_like unless told they are banned; fxcpp knows.
  EXPECT_EQ(gm->graph().to_string(), oracle("Random", "graph"));
  EXPECT_EQ(gm->code(), oracle("Random", "code"));
}

TEST(CSE, NoMergeAcrossInPlaceWrite) {
  SKIP_WITHOUT_ORACLE();
  Mutated model;
  auto gm = fx::symbolic_trace(model);
  ASSERT_EQ(gm->graph().to_string(), oracle("Mutated", "before"));
  at::Tensor x = torch::rand({3});
  c10::IValue before = gm->run({x});
  EXPECT_FALSE(fx::passes::cse(*gm));
  EXPECT_EQ(gm->graph().to_string(), oracle("Mutated", "before"));
  simplify_test::expect_allclose(before, gm->run({x}));
  simplify_test::expect_allclose(before, (x + 1) * (x + 2));
}

// ATen-level graphs: a banned packet bans every overload of it.
TEST(CSE, BannedOps) {
  auto make = [] {
    auto g = std::make_unique<fx::Graph>();
    fx::Node* x = g->placeholder("x");
    fx::Node* a = g->call_function("torch.ops.aten.mul.Tensor", {x, x});
    fx::Node* b = g->call_function("torch.ops.aten.mul.Tensor", {x, x});
    fx::Node* c = g->call_function("torch.ops.aten.rand_like.default", {x});
    fx::Node* d = g->call_function("torch.ops.aten.rand_like.default", {x});
    g->output(fx::tuple({a, b, c, d}));
    return g;
  };
  auto g = make();
  EXPECT_TRUE(fx::passes::cse(*g));
  EXPECT_EQ(g->size(), 5u);  // x, mul, rand_like, rand_like_1, output
  auto banned = make();
  EXPECT_FALSE(fx::passes::cse(*banned, {fx::Target("torch.ops.aten.mul")}));
  auto with_fx_list = make();
  EXPECT_TRUE(fx::passes::cse(*with_fx_list, fx::passes::get_CSE_banned_ops()));
  EXPECT_EQ(with_fx_list->size(), 5u);
}

// One target, two answers: a dropout's training argument decides per call.
TEST(CSE, DropoutInTrainingIsRandomAndOutOfItIsPure) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  const fx::Target dropout("torch.nn.functional.dropout");
  fx::Node* t1 = g.call_function(dropout, {x, 0.5, true});
  fx::Node* t2 = g.call_function(dropout, {x, 0.5, true});
  fx::Node* e1 = g.call_function(dropout, {x, 0.5, false});
  fx::Node* e2 = g.call_function(dropout, {x, 0.5, false});
  g.output(fx::tuple({t1, t2, e1, e2}));
  EXPECT_TRUE(fx::passes::cse(g));
  EXPECT_EQ(g.size(), 5u);  // x, dropout, dropout_1, dropout_2, output
  EXPECT_EQ(g.output_node()->format_node(), "return (dropout, dropout_1, dropout_2, dropout_2)");
}

// Values of different kinds stay apart: 1, 1.0 and true.
TEST(CSE, KindsOfConstants) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("operator.add", {x, 1});
  fx::Node* b = g.call_function("operator.add", {x, 1.0});
  fx::Node* c = g.call_function("operator.add", {x, true});
  fx::Node* d = g.call_function("operator.getitem", {x, fx::tuple({fx::slice(fx::None, 2), 0})});
  fx::Node* e = g.call_function("operator.getitem", {x, fx::tuple({fx::slice(fx::None, 2), 0})});
  g.output(fx::tuple({a, b, c, d, e}));
  EXPECT_TRUE(fx::passes::cse(g));
  EXPECT_EQ(g.size(), 6u);
  g.lint();
}

}  // namespace

namespace {

// 150k nodes: every pair of identical nodes merges (no recursion, nothing
// quadratic to stall on; the timing is bench/passes_bench.cpp's).
TEST(CSE, LargeGraph) {
  constexpr int kPairs = 50000;
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* cur = x;
  for (int i = 0; i < kPairs; ++i) {
    fx::Node* a = g.call_function("operator.add", {cur, i % 7});
    fx::Node* b = g.call_function("operator.add", {cur, i % 7});
    cur = g.call_function("operator.mul", {a, b});
  }
  g.output(cur);
  // The purity rules index the ATen operators once per process; not part of the pass.
  g.output_node()->args()[0].node()->impurity();
  EXPECT_TRUE(fx::passes::cse(g));  // its speed: bench/passes_bench.cpp
  EXPECT_EQ(g.size(), static_cast<size_t>(2 * kPairs + 2));
}

}  // namespace

#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/passes/dead_code_elimination.h>

namespace {

// CSE then DCE on the corpus: the graph as torch.fx's CSEPass leaves
// torchvision's, lint clean, outputs allclose.
void check_corpus(const std::string& name, fx::Module& model, const at::Tensor& x) {
  model.eval();
  auto gm = fx::symbolic_trace(model);
  c10::IValue before = gm->run({x});
  bool modified = fx::passes::cse(*gm);
  if (!name.empty()) {
    EXPECT_EQ(modified, simplify_test::oracle_flag(name, "modified"));
    EXPECT_EQ(gm->graph().to_string(), oracle(name, "graph"));
    EXPECT_EQ(gm->code(), oracle(name, "code"));
  }
  fx::passes::eliminate_dead_code(*gm);
  gm->graph().lint();
  simplify_test::expect_allclose(before, gm->run({x}), 1e-4, 1e-5);
}

TEST(CSE, Resnet18AsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  check_corpus("resnet18", *fx::models::resnet18(), torch::rand({1, 3, 64, 64}));
}

TEST(CSE, MobilenetV2AsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  check_corpus("mobilenet_v2", *fx::models::mobilenet_v2(), torch::rand({1, 3, 64, 64}));
}

TEST(CSE, SmallVitKeepsItsOutputs) {
  torch::manual_seed(0);
  fx::models::VisionTransformer vit(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  check_corpus("", vit, torch::rand({2, 3, 32, 32}));
}

}  // namespace
