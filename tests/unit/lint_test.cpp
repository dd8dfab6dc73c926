#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

template <class F>
std::string lint_message(F&& build) {
  try {
    build();
  } catch (const fx::LintError& e) {
    return e.what();
  }
  return "";
}

struct FakeModule : fx::OwningModule {
  bool has_submodule(std::string_view p) const override { return p == "linear"; }
  bool has_attribute(std::string_view p) const override { return p == "linear.weight" || p == "linear"; }
};

TEST(Lint, CleanGraphPasses) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  g.output(g.call_function("torch.relu", {x}));
  EXPECT_NO_THROW(g.lint());
}

TEST(Lint, NeedsAnOutput) {
  fx::Graph g;
  g.placeholder("x");
  EXPECT_EQ(lint_message([&] { g.lint(); }),
            "lint: the graph has no output node; add one with Graph::output");
}

TEST(Lint, ChecksTargetsAgainstTheOwningModule) {
  FakeModule m;
  fx::Graph g;
  g.set_owning_module(&m);
  fx::Node* x = g.placeholder("x");
  fx::Node* w = g.get_attr("linear.weight");
  fx::Node* l = g.call_module("linear", {x});
  g.output(fx::tuple({w, l}));
  EXPECT_NO_THROW(g.lint());

  fx::Graph bad;
  bad.set_owning_module(&m);
  fx::Node* y = bad.placeholder("y");
  bad.output(bad.call_module("conv", {y}));
  EXPECT_EQ(lint_message([&] { bad.lint(); }),
            "lint: node 'conv': target 'conv' does not exist in the owning module (no such submodule)");

  fx::Graph bad_attr;
  bad_attr.set_owning_module(&m);
  bad_attr.output(bad_attr.get_attr("linear.bias"));
  EXPECT_EQ(lint_message([&] { bad_attr.lint(); }),
            "lint: node 'linear_bias': target 'linear.bias' does not exist in the owning module");
}

TEST(Lint, ChecksTargetShapes) {
  fx::Graph g;
  g.output(g.get_attr("a..b"));
  EXPECT_EQ(lint_message([&] { g.lint(); }),
            "lint: node 'a_b': target 'a..b' is not a dotted attribute path");

  fx::Graph m;
  m.output(m.call_method("relu", {}));
  EXPECT_EQ(lint_message([&] { m.lint(); }),
            "lint: node 'relu': a call_method node needs its self value as args[0]");

  fx::Graph p;
  p.create_node(fx::Op::placeholder, "x", {1, 2});
  p.output(1);
  EXPECT_EQ(lint_message([&] { p.lint(); }), "lint: node 'x': a placeholder takes at most one default value");
}

TEST(Lint, DeadCodeEliminationLintsFirst) {
  fx::Graph g;
  g.placeholder("x");
  EXPECT_THROW(g.eliminate_dead_code(), fx::LintError);
}

}  // namespace
