// fx::cond and fx::while_loop: eagerly, and captured into graphs that hold
// both branches (the graph text is checked against make_fx in
// conformance_test.cpp).
#include <fx/capture.h>
#include <fx/control_flow.h>
#include <fx/error.h>
#include <fx/graph_module.h>
#include <fx/passes/cse.h>
#include <fx/passes/dead_code_elimination.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using Inputs = std::vector<c10::IValue>;

fx::Tensors sin_branch(const fx::Tensors& a) { return {a[0].sin()}; }
fx::Tensors cos_branch(const fx::Tensors& a) { return {a[0].cos() + 1}; }

c10::IValue positive_sin(const Inputs& in) {
  at::Tensor x = in[0].toTensor();
  return fx::cond(x.sum() > 0, sin_branch, cos_branch, {x})[0];
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ControlFlow, EagerCondRunsThePickedBranch) {
  at::Tensor x = torch::rand({3}) + 1;
  EXPECT_TRUE(torch::equal(positive_sin({x}).toTensor(), x.sin()));
  EXPECT_TRUE(torch::equal(positive_sin({-x}).toTensor(), (-x).cos() + 1));
  EXPECT_NE(error_of([&] { fx::cond(x > 0, sin_branch, cos_branch, {x}); })
                .find("fx::cond: the predicate must be a one-element tensor, got 3 elements"),
            std::string::npos);
}

TEST(ControlFlow, CapturedCondRunsEitherBranch) {
  at::Tensor x = torch::rand({3}) + 1;
  auto gm = fx::capture(positive_sin, {x});
  // Captured with a positive input, the graph still takes the other branch.
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), x.sin()));
  EXPECT_TRUE(torch::allclose(gm->run({-x}).toTensor(), (-x).cos() + 1));
  // docs/control_flow.md's listings.
  EXPECT_EQ(gm->code(),
            "\n\n\ndef forward(self, arg0_1):\n"
            "    sum_1 = torch.ops.aten.sum.default(arg0_1)\n"
            "    gt = torch.ops.aten.gt.Scalar(sum_1, 0);  sum_1 = None\n"
            "    true_graph_0 = self.true_graph_0\n"
            "    false_graph_0 = self.false_graph_0\n"
            "    cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (arg0_1,));  gt = "
            "true_graph_0 = false_graph_0 = arg0_1 = None\n"
            "    getitem = cond[0];  cond = None\n"
            "    return getitem\n    ");
  auto* branch = dynamic_cast<fx::GraphModule*>(gm->get_submodule("true_graph_0"));
  ASSERT_NE(branch, nullptr);
  EXPECT_EQ(branch->code(),
            "\n\n\ndef forward(self, arg0_1):\n"
            "    sin = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None\n"
            "    return (sin,)\n    ");
}

TEST(ControlFlow, TwoCondsNumberTheirBranches) {
  auto gm = fx::capture(
      [](const Inputs& in) -> c10::IValue {
        at::Tensor x = in[0].toTensor();
        at::Tensor y = fx::cond(x.sum() > 0, sin_branch, cos_branch, {x})[0];
        return fx::cond(y.sum() > 1, cos_branch, sin_branch, {y})[0];
      },
      {torch::randn({4})});
  EXPECT_NE(gm->code().find("true_graph_1 = self.true_graph_1"), std::string::npos) << gm->code();
  at::Tensor x = torch::randn({4});
  at::Tensor y = x.sum().item<float>() > 0 ? x.sin() : x.cos() + 1;
  at::Tensor want = y.sum().item<float>() > 1 ? y.cos() + 1 : y.sin();
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want));
}

TEST(ControlFlow, BranchesThatDisagreeAreATraceErrorNamingBoth) {
  auto capture = [](fx::TensorsFn other) {
    return error_of([&] {
      fx::capture(
          [&](const Inputs& in) -> c10::IValue {
            at::Tensor x = in[0].toTensor();
            return fx::cond(x.sum() > 0, sin_branch, other, {x})[0];
          },
          {torch::randn({3})});
    });
  };
  EXPECT_EQ(capture([](const fx::Tensors& a) { return fx::Tensors{a[0], a[0]}; }),
            "fx::cond: the branches must return the same number of tensors with the same dtypes and sizes: "
            "true_fn returns 1 tensor (Float[3]), false_fn returns 2 tensors (Float[3], Float[3])");
  EXPECT_NE(capture([](const fx::Tensors& a) { return fx::Tensors{a[0].sum()}; }).find("false_fn returns 1 tensor (Float[])"),
            std::string::npos);
}

TEST(ControlFlow, ABranchThatReadsAValueItWasNotGivenIsRefusedByName) {
  const std::string message = error_of([] {
    fx::capture(
        [](const Inputs& in) -> c10::IValue {
          at::Tensor x = in[0].toTensor();
          at::Tensor scale = x.abs() + 1;  // not an operand of the branches
          return fx::cond(
              x.sum() > 0, [&](const fx::Tensors& a) { return fx::Tensors{a[0] * scale}; },
              [](const fx::Tensors& a) { return fx::Tensors{a[0]}; }, {x})[0];
        },
        {torch::randn({3})});
  });
  EXPECT_NE(message.find("a branch of fx::cond or fx::while_loop reads 'add', a value of the code around it that "
                         "is not one of its operands"),
            std::string::npos)
      << message;
}

TEST(ControlFlow, WhileLoopEagerAndCaptured) {
  auto doubling = [](const Inputs& in) -> c10::IValue {
    auto out = fx::while_loop([](const fx::Tensors& c) { return c[0] < 5; },
                              [](const fx::Tensors& c) { return fx::Tensors{c[0] + 1, c[1] * 2}; },
                              {in[0].toTensor(), in[1].toTensor()});
    return c10::ivalue::Tuple::create({out[0], out[1]});
  };
  at::Tensor x = torch::randn({3});
  auto eager = doubling({torch::tensor(0), x}).toTupleRef().elements();
  EXPECT_EQ(eager[0].toTensor().item<int64_t>(), 5);
  EXPECT_TRUE(torch::allclose(eager[1].toTensor(), x * 32));
  auto gm = fx::capture(doubling, {torch::tensor(0), x});
  // Another start: another number of iterations, in the same graph.
  auto out = gm->run({torch::tensor(3), x}).toTupleRef().elements();
  EXPECT_EQ(out[0].toTensor().item<int64_t>(), 5);
  EXPECT_TRUE(torch::allclose(out[1].toTensor(), x * 4));
  EXPECT_NE(error_of([] {
              fx::while_loop([](const fx::Tensors& c) { return c[0] < 5; },
                             [](const fx::Tensors& c) { return fx::Tensors{c[0] + 1}; },
                             {torch::tensor(0), torch::randn({2})});
            }).find("fx::while_loop: body_fn must return what it is given: it was given 2 tensors (Long[], Float[2]) and returned 1 tensor (Long[])"),
            std::string::npos);
}

// The GraphModule-level DCE and CSE go into the branches, which are
// GraphModules of their own.
TEST(ControlFlow, DeadCodeEliminationAndCseGoIntoTheBranches) {
  auto fn = [](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    return fx::cond(
        x.sum() > 0,
        [](const fx::Tensors& a) {
          at::Tensor unused = a[0] * 3;
          return fx::Tensors{a[0].sin() + a[0].sin()};
        },
        cos_branch, {x})[0];
  };
  at::Tensor x = torch::rand({3}) + 1;
  auto gm = fx::capture(fn, {x});
  auto* branch = dynamic_cast<fx::GraphModule*>(gm->get_submodule("true_graph_0"));
  ASSERT_NE(branch, nullptr);
  auto count = [&](const std::string& target) {
    size_t n = 0;
    for (fx::Node* node : branch->graph().nodes()) n += node->target().str() == target;
    return n;
  };
  ASSERT_EQ(count("torch.ops.aten.mul.Scalar"), 1u) << branch->code();
  ASSERT_EQ(count("torch.ops.aten.sin.default"), 2u);
  EXPECT_TRUE(fx::passes::eliminate_dead_code(*gm));
  EXPECT_EQ(count("torch.ops.aten.mul.Scalar"), 0u);
  EXPECT_TRUE(fx::passes::cse(*gm));
  EXPECT_EQ(count("torch.ops.aten.sin.default"), 1u);
  EXPECT_FALSE(fx::passes::cse(*gm));
  // The branch was recompiled: its code no longer reads the merged value.
  EXPECT_EQ(branch->code().find("sin_1"), std::string::npos) << branch->code();
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), x.sin() + x.sin()));
  EXPECT_TRUE(torch::allclose(gm->run({-x}).toTensor(), (-x).cos() + 1));
}

}  // namespace
