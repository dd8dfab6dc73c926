// fx::passes::eliminate_dead_code and Graph::eliminate_dead_code against
// torch.fx 2.14's Graph.eliminate_dead_code (dce_oracle.py, same models in
// Python): equal where 2.14 is right, the intended result where 2.14 deletes
// in-place calls (call_method ones, torch.nn.functional.relu_, inplace=True).
// Both follow the one purity rule, Node::impurity (fx/impurity.h).
#include <fx/fx.h>
#include <fx/passes/dead_code_elimination.h>

#include <iostream>

#include "simplify_test_util.h"

namespace {

using fx::kw;
using fx::Value;
using simplify_test::oracle;

struct DeadPure : fx::Module {
  at::Tensor w;
  std::shared_ptr<fx::nn::Linear> lin;
  DeadPure() : fx::Module("DeadPure") {
    w = register_parameter("w", torch::randn({3}));
    lin = register_module("lin", std::make_shared<fx::nn::Linear>(3, 3));
  }
  Value forward(const std::vector<Value>& in) override {
    const Value& x = in[0];
    Value a = x + 1;
    fx::call("torch.relu", a);
    Value(w) * x;
    (*lin)(x);
    x.sum();
    fx::call("torch._assert", fx::call("operator.eq", x.dim(), 2), "rank");
    return x * 2;
  }
};

struct InPlace : fx::Module {
  InPlace() : fx::Module("InPlace") {}
  Value forward(const std::vector<Value>& in) override {
    const Value& x = in[0];
    Value y = x.clone();
    y.call_method("add_", {1});
    fx::call("torch.nn.functional.relu_", y);
    x + 1;
    fx::call("torch.randn_like", x);
    x.call_method("bernoulli");
    fx::call("torch.nn.functional.relu", y, kw("inplace", true));
    fx::call("torch.nn.functional.dropout", x, kw("p", 0.5), kw("training", false), kw("inplace", false));
    x.sum();
    return y;
  }
};

template <class M>
void check(const std::string& name, bool fx_agrees) {
  SKIP_WITHOUT_ORACLE();
  M model;
  auto gm = fx::symbolic_trace(model);
  ASSERT_EQ(gm->graph().to_string(), oracle(name, "before"));
  at::Tensor x = torch::rand({2, 3});
  c10::IValue before = gm->run({x.clone()});

  bool changed = fx::passes::eliminate_dead_code(*gm);
  EXPECT_EQ(changed, simplify_test::oracle_flag(name, "changed"));
  EXPECT_EQ(gm->graph().to_string(), oracle(name, "graph"));
  EXPECT_EQ(gm->code(), oracle(name, "code"));
  gm->graph().lint();
  simplify_test::expect_allclose(before, gm->run({x.clone()}));
  // A second run finds nothing more.
  EXPECT_FALSE(fx::passes::eliminate_dead_code(*gm));

  // Graph::eliminate_dead_code asks the same rule.
  auto graph_gm = fx::symbolic_trace(model);
  EXPECT_EQ(graph_gm->graph().eliminate_dead_code(), simplify_test::oracle_flag(name, "changed"));
  EXPECT_EQ(graph_gm->graph().to_string(), oracle(name, "graph"));
  // Where torch.fx 2.14 itself deletes more.
  EXPECT_EQ(fx_agrees, oracle(name, "fx_graph") == oracle(name, "graph"));
}

TEST(DeadCodeElimination, PureDeadCodeAsTorchFx) { check<DeadPure>("DeadPure", true); }
TEST(DeadCodeElimination, KeepsInPlaceAndRandomCalls) { check<InPlace>("InPlace", false); }

// The impurity of one call_function / call_method node built by hand.
fx::Impurity classify(fx::Op op, const char* target, fx::Args args = {}, fx::Kwargs kwargs = {}) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  args.insert(args.begin(), x);
  fx::Node* n = g.create_node(op, target, std::move(args), std::move(kwargs));
  g.output(x);
  return n->impurity();
}

TEST(DeadCodeElimination, Impurity) {
  using fx::Op;
  using I = fx::Impurity;
  EXPECT_EQ(classify(Op::call_function, "operator.add", {1}), I::none);
  EXPECT_EQ(classify(Op::call_function, "operator.and_", {1}), I::none);
  EXPECT_EQ(classify(Op::call_function, "operator.iadd", {1}), I::in_place);
  EXPECT_EQ(classify(Op::call_function, "operator.setitem", {0, 1}), I::in_place);
  EXPECT_EQ(classify(Op::call_function, "torch.relu"), I::none);
  EXPECT_EQ(classify(Op::call_function, "torch.relu_"), I::in_place);
  EXPECT_EQ(classify(Op::call_function, "torch.nn.functional.relu", {}, {{"inplace", true}}), I::in_place);
  EXPECT_EQ(classify(Op::call_function, "torch.nn.functional.relu", {}, {{"inplace", false}}), I::none);
  EXPECT_EQ(classify(Op::call_function, "torch.add", {1}, {{"out", fx::None}}), I::none);
  EXPECT_EQ(classify(Op::call_function, "torch.rand_like"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.randperm"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.normal"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.poisson"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.bernoulli"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.nn.functional.dropout"),
            I::random);  // training=True by default
  EXPECT_EQ(classify(Op::call_function, "torch.nn.functional.dropout", {0.5, false}), I::none);
  EXPECT_EQ(classify(Op::call_function, "torch._assert", {"msg"}), I::side_effect);
  EXPECT_EQ(classify(Op::call_function, "torch._assert_async"), I::side_effect);
  EXPECT_EQ(classify(Op::call_function, "torch.ops.aten._assert_scalar.default", {"msg"}), I::side_effect);
  EXPECT_EQ(classify(Op::call_function, "torch.amp.autocast_mode._enter_autocast"), I::side_effect);
  EXPECT_EQ(classify(Op::call_function, "builtins.print"), I::returns_none);
  EXPECT_EQ(classify(Op::call_function, "torch.ops.aten.add.Tensor", {1}), I::none);
  EXPECT_EQ(classify(Op::call_function, "torch.ops.aten.add_.Tensor", {1}), I::in_place);
  EXPECT_EQ(classify(Op::call_function, "torch.ops.aten.randn_like.default"), I::random);
  EXPECT_EQ(classify(Op::call_function, "torch.ops.aten._assert_async.default"), I::returns_none);
  EXPECT_EQ(classify(Op::call_method, "add", {1}), I::none);
  EXPECT_EQ(classify(Op::call_method, "add_", {1}), I::in_place);
  EXPECT_EQ(classify(Op::call_method, "__setitem__", {0, 1}), I::in_place);
  EXPECT_EQ(classify(Op::call_method, "normal_"), I::in_place);
  EXPECT_EQ(classify(Op::call_method, "multinomial", {2}), I::random);
  EXPECT_EQ(classify(Op::call_method, "backward"), I::returns_none);
}

// A Dropout module is random in training mode only.
TEST(DeadCodeElimination, DropoutModuleInTraining) {
  struct M : fx::Module {
    std::shared_ptr<fx::nn::Dropout> drop;
    M() : fx::Module("M") { drop = register_module("drop", std::make_shared<fx::nn::Dropout>()); }
    Value forward(const std::vector<Value>& in) override {
      (*drop)(in[0]);
      return in[0];
    }
  } m;
  auto gm = fx::symbolic_trace(m);
  gm->train(true);
  EXPECT_FALSE(fx::passes::eliminate_dead_code(*gm));
  gm->eval();
  EXPECT_TRUE(fx::passes::eliminate_dead_code(*gm));
  EXPECT_EQ(gm->graph().size(), 2u);
}

// A module of one's own says what its calls do (torch.fx's `_is_impure`):
// dead-code elimination keeps an unused call of one with an effect.
TEST(DeadCodeElimination, ModuleImpurityOfOnesOwn) {
  struct Log : fx::nn::StandardModule {
    Log() : StandardModule("Log") {}
    fx::Impurity impurity() const override { return fx::Impurity::side_effect; }
    Value forward(const std::vector<Value>& in) override { return in[0]; }
  };
  struct M : fx::Module {
    std::shared_ptr<Log> log;
    std::shared_ptr<fx::nn::ReLU> relu;
    M() : fx::Module("M") {
      log = register_module("log", std::make_shared<Log>());
      relu = register_module("relu", std::make_shared<fx::nn::ReLU>());
    }
    Value forward(const std::vector<Value>& in) override {
      (*log)(in[0]);
      (*relu)(in[0]);
      return in[0];
    }
  } m;
  auto gm = fx::symbolic_trace(m);
  EXPECT_TRUE(fx::passes::eliminate_dead_code(*gm));
  ASSERT_EQ(gm->graph().size(), 3u);
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_module, fx::Target("log")).size(), 1u);
}

// Graph::eliminate_dead_code keeps an unused in-place call (torch.fx 2.14
// deletes a call_method `x.add_(1)`, which changes x), and takes torch.fx's
// is_impure_node to decide otherwise.
TEST(DeadCodeElimination, GraphKeepsInPlaceCalls) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  g.call_method("add_", {x, 1});
  g.call_function("torch.rand", {3});
  g.call_function("operator.add", {x, 1});
  g.output(x);
  EXPECT_TRUE(g.eliminate_dead_code());
  EXPECT_EQ(g.size(), 4u);
  EXPECT_FALSE(g.eliminate_dead_code());
  EXPECT_TRUE(g.eliminate_dead_code(
      [](const fx::Node& n) { return n.op() == fx::Op::placeholder || n.op() == fx::Op::output; }));
  EXPECT_EQ(g.size(), 2u);
}

// A call_module whose target is missing from the module is not a crash: the
// pass only needs the module to know whether it is impure (it is not).
TEST(DeadCodeElimination, MissingModule) {
  DeadPure m;
  auto gm = fx::symbolic_trace(m);
  fx::Node* x = *gm->graph().nodes().begin();
  {
    auto guard = gm->graph().inserting_after(x);
    gm->graph().call_module("no_such_module", {x});
  }
  EXPECT_THROW(gm->graph().lint(), fx::LintError);
  EXPECT_TRUE(fx::passes::eliminate_dead_code(gm->graph()));
  EXPECT_TRUE(gm->graph().find_nodes(fx::Op::call_module, "no_such_module").empty());
  gm->graph().lint();
}

}  // namespace

namespace {

// 100k nodes, half of them dead, hanging off a live chain (no recursion,
// nothing quadratic to stall on; the timing is bench/passes_bench.cpp's).
TEST(DeadCodeElimination, LargeGraph) {
  constexpr int kN = 50000;
  fx::Graph g;
  fx::Node* cur = g.placeholder("x");
  for (int i = 0; i < kN; ++i) {
    g.call_function("torch.relu", {cur});  // dead
    cur = g.call_method(i % 3 ? "add" : "add_", {cur, 1});
  }
  g.output(cur);
  // The purity rules index the ATen operators once per process; not part of the pass.
  g.output_node()->args()[0].node()->impurity();
  EXPECT_TRUE(fx::passes::eliminate_dead_code(g));  // its speed: bench/passes_bench.cpp
  EXPECT_EQ(g.size(), static_cast<size_t>(kN + 2));
}

}  // namespace
