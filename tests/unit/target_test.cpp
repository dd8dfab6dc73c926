// fx::Target: a torch.ops name is taken apart once, and its operator found
// once, when a pass first asks.
#include <fx/fx.h>
#include <gtest/gtest.h>

#include <ATen/core/dispatch/Dispatcher.h>

namespace {

TEST(Target, OpsNameParts) {
  const fx::OpsName* add = fx::Target("torch.ops.aten.add.Tensor").ops_name();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->ns, "aten");
  EXPECT_EQ(add->op, "add");
  EXPECT_EQ(add->overload, "Tensor");
  EXPECT_FALSE(add->is_packet());
  EXPECT_EQ(add->qualified_op(), "aten::add");
  EXPECT_EQ(add->dispatcher_overload(), "Tensor");

  const fx::OpsName* relu = fx::Target("torch.ops.aten.relu.default").ops_name();
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->dispatcher_overload(), "");

  const fx::OpsName* packet = fx::Target("torch.ops.aten.add").ops_name();
  ASSERT_NE(packet, nullptr);
  EXPECT_TRUE(packet->is_packet());
  EXPECT_EQ(packet->op, "add");

  EXPECT_EQ(fx::Target("torch.add").ops_name(), nullptr);
  EXPECT_EQ(fx::Target("torch.ops.aten").ops_name(), nullptr);  // no operator named
  EXPECT_EQ(fx::Target("operator.add").ops_name(), nullptr);
}

TEST(Target, OperatorHandleIsFoundOnce) {
  const c10::OperatorHandle* add = fx::Target("torch.ops.aten.add.Tensor").operator_handle();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->schema().name(), "aten::add");
  EXPECT_EQ(add->schema().overload_name(), "Tensor");
  EXPECT_EQ(fx::Target("torch.ops.aten.add.Tensor").operator_handle(), add);  // the same, kept
  // A packet: its default overload.
  const c10::OperatorHandle* relu = fx::Target("torch.ops.aten.relu").operator_handle();
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->schema().overload_name(), "");
  EXPECT_EQ(fx::Target("torch.ops.aten.no_such_op.default").operator_handle(), nullptr);
  EXPECT_EQ(fx::Target("torch.relu").operator_handle(), nullptr);
}

}  // namespace
