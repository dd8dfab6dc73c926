// partition_joint alone (src/compile/partition.cpp): which nodes of a joint
// graph go to the forward, which to the backward, and what is saved.
#include "../../src/compile/phases.h"

#include <fx/error.h>
#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/passes/shape_prop.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

namespace {

using testing::HasSubstr;
using testing::Not;

// The joint graph of y = x * w with a tangent t: dx = t * w * sigmoid(x) *
// x, where sigmoid(x) depends on no tangent and only the backward reads it;
// and a running count written back, which only the forward's effects need.
// Sizes and dtypes from a run, as fx::capture records them.
std::unique_ptr<fx::GraphModule> joint_graph() {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w = g->get_attr("w");
  fx::Node* count = g->get_attr("count");
  fx::Node* y = g->call_function("torch.ops.aten.mul.Tensor", {x, w});
  fx::Node* s = g->call_function("torch.ops.aten.sigmoid.default", {x});
  fx::Node* next = g->call_function("torch.ops.aten.add.Scalar", {count, 1});
  g->call_function("torch.ops.aten.copy_.default", {count, next});
  fx::Node* empty = g->call_function("torch.ops.aten.empty_like.default", {y});
  fx::Node* t = g->call_function("torch.ops.aten.fill.Scalar", {empty, 1.0});
  fx::Node* tw = g->call_function("torch.ops.aten.mul.Tensor", {t, w});
  fx::Node* dx = g->call_function("torch.ops.aten.mul.Tensor",
                                  {g->call_function("torch.ops.aten.mul.Tensor", {tw, s}), x});
  g->output(fx::Tuple{{y, t, dx}});
  std::map<std::string, fx::GraphModule::Attr> attrs{{"w", torch::randn({4})}, {"count", torch::zeros({})}};
  auto gm = std::make_unique<fx::GraphModule>(attrs, std::move(g));
  fx::passes::ShapeProp(*gm).propagate({fx::Value(torch::randn({4}))});
  return gm;
}

TEST(PartitionJoint, SavesWhatTheBackwardReadsAndMovesTheRestThere) {
  auto joint = joint_graph();
  fx::compile_detail::JointPartition p = fx::compile_detail::partition_joint(*joint, 1, 1);
  // The forward: its output, the count's update (an effect), and x saved,
  // which the backward reads and computes the sigmoid from (saving both
  // would cost twice the bytes); w is read, not saved.
  EXPECT_EQ(p.num_saved, 1u);
  const std::string forward = p.forward->graph().to_string();
  EXPECT_THAT(forward, HasSubstr("copy_"));
  EXPECT_THAT(forward, Not(HasSubstr("sigmoid")));
  EXPECT_THAT(forward, Not(HasSubstr("fill")));
  EXPECT_THAT(forward, HasSubstr("return (mul_tensor, x)"));
  const std::string backward = p.backward->graph().to_string();
  EXPECT_THAT(backward, HasSubstr("%x : [num_users=2] = placeholder[target=x]"));
  EXPECT_THAT(backward, HasSubstr("%tangents_1 : [num_users=1] = placeholder[target=tangents_1]"));
  EXPECT_THAT(backward, HasSubstr("sigmoid"));
  EXPECT_THAT(backward, HasSubstr("get_attr[target=w]"));
  EXPECT_THAT(backward, Not(HasSubstr("copy_")));

  // Run apart, they give the joint's values.
  at::Tensor x = torch::randn({4}), t = torch::ones({4});
  const c10::IValue joint_out = joint->run({x});
  const c10::IValue f = p.forward->run({x});
  const auto& fo = f.toTupleRef().elements();
  const c10::IValue b = p.backward->run({fo[1], t});
  EXPECT_TRUE(at::allclose(fo[0].toTensor(), joint_out.toTupleRef().elements()[0].toTensor()));
  EXPECT_TRUE(
      at::allclose(b.toTupleRef().elements()[0].toTensor(), joint_out.toTupleRef().elements()[2].toTensor()));
}

// A two-layer perceptron's joint graph: h = x @ w1, g = gelu(h), y = g @ w2
// with a tangent t; the backward reads x and h (w1's gradient, GELU's) and g
// (w2's gradient). The default partition saves all three; the minimum cut
// saves x and h and computes g again from h in the backward, as
// AOTAutograd's min-cut partition does: a matrix product is never computed
// again, a pointwise operator is.
TEST(PartitionJoint, APointwiseValueTheForwardNeedsIsComputedAgainRatherThanSaved) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w1 = g->get_attr("w1");
  fx::Node* w2 = g->get_attr("w2");
  fx::Node* h = g->call_function("torch.ops.aten.mm.default", {x, w1});
  fx::Node* act = g->call_function("torch.ops.aten.gelu.default", {h});
  fx::Node* y = g->call_function("torch.ops.aten.mm.default", {act, w2});
  fx::Node* t = g->call_function("torch.ops.aten.ones_like.default", {y});
  fx::Node* dact =
      g->call_function("torch.ops.aten.mm.default", {t, g->call_function("torch.ops.aten.t.default", {w2})});
  fx::Node* dw2 =
      g->call_function("torch.ops.aten.mm.default", {g->call_function("torch.ops.aten.t.default", {act}), t});
  fx::Node* dh = g->call_function("torch.ops.aten.gelu_backward.default", {dact, h});
  fx::Node* dw1 =
      g->call_function("torch.ops.aten.mm.default", {g->call_function("torch.ops.aten.t.default", {x}), dh});
  g->output(fx::Tuple{{y, t, dw1, dw2}});
  std::map<std::string, fx::GraphModule::Attr> attrs{{"w1", torch::randn({8, 16})},
                                                     {"w2", torch::randn({16, 4})}};
  fx::GraphModule joint(attrs, std::move(g));
  at::Tensor xv = torch::randn({32, 8});
  fx::passes::ShapeProp(joint).propagate({fx::Value(xv)});

  fx::compile_detail::JointPartition p = fx::compile_detail::partition_joint(joint, 1, 1);
  EXPECT_EQ(p.num_saved, 2u);
  const std::string forward = p.forward->graph().to_string(), backward = p.backward->graph().to_string();
  EXPECT_THAT(forward, HasSubstr("return (mm_default_1, x, mm_default)")) << forward;
  EXPECT_THAT(backward, HasSubstr("gelu.default](args = (%mm_default,)")) << backward;
  EXPECT_THAT(backward, Not(HasSubstr("torch.ops.aten.mm.default](args = (%x, "))) << backward;

  // Run apart, they give the joint's gradients.
  const auto joint_out = joint.run({xv}).toTupleRef().elements();
  const auto f = p.forward->run({xv}).toTupleRef().elements();
  const auto b = p.backward->run({f[1], f[2], torch::ones({32, 4})}).toTupleRef().elements();
  EXPECT_TRUE(at::allclose(b[0].toTensor(), joint_out[2].toTensor()));
  EXPECT_TRUE(at::allclose(b[1].toTensor(), joint_out[3].toTensor()));
}

// An input the forward writes in place (a functionalized `x.add_(1)`)
// holds its new value when the backward runs: the values the backward
// computes from it are saved instead, though saving x would cost half.
TEST(PartitionJoint, NothingIsComputedAgainFromAnInputTheForwardWrites) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w = g->get_attr("w");
  fx::Node* y = g->call_function("torch.ops.aten.mul.Tensor", {x, w});
  fx::Node* a = g->call_function("torch.ops.aten.sigmoid.default", {x});
  fx::Node* b = g->call_function("torch.ops.aten.tanh.default", {x});
  fx::Node* t = g->call_function("torch.ops.aten.ones_like.default", {y});
  fx::Node* dx = g->call_function("torch.ops.aten.mul.Tensor",
                                  {g->call_function("torch.ops.aten.mul.Tensor", {t, a}), b});
  g->call_function("torch.ops.aten.copy_.default",
                   {x, g->call_function("torch.ops.aten.add.Tensor", {x, 1})});
  g->output(fx::Tuple{{y, t, dx}});
  std::map<std::string, fx::GraphModule::Attr> attrs{{"w", torch::randn({4})}};
  fx::GraphModule joint(attrs, std::move(g));
  fx::passes::ShapeProp(joint).propagate({fx::Value(torch::randn({4}))});

  fx::compile_detail::JointPartition p = fx::compile_detail::partition_joint(joint, 1, 1);
  EXPECT_EQ(p.num_saved, 2u);
  const std::string backward = p.backward->graph().to_string();
  EXPECT_THAT(backward, Not(HasSubstr("torch.ops.aten.sigmoid"))) << backward;
  EXPECT_THAT(backward, Not(HasSubstr("torch.ops.aten.tanh"))) << backward;
  at::Tensor xv = torch::randn({4});
  const at::Tensor x0 = xv.clone(), want = xv.sigmoid() * xv.tanh();
  const auto f = p.forward->run({xv}).toTupleRef().elements();
  EXPECT_TRUE(at::allclose(xv, x0 + 1));  // the forward wrote x
  const auto back = p.backward->run({f[1], f[2], torch::ones({4})}).toTupleRef().elements();
  EXPECT_TRUE(at::allclose(back[0].toTensor(), want));
}

TEST(PartitionJoint, AnOutputThatReadsATangentIsAnError) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* t = g->call_function("torch.ops.aten.ones_like.default", {x});
  fx::Node* bad = g->call_function("torch.ops.aten.mul.Tensor", {x, t});
  g->output(fx::Tuple{{bad, t}});
  fx::GraphModule joint(std::map<std::string, fx::GraphModule::Attr>{}, std::move(g));
  try {
    fx::compile_detail::partition_joint(joint, 1, 1);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("output 0 of the forward depends on a tangent"));
  }
}

}  // namespace
