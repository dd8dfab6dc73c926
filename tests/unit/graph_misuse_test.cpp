// Misuse of the API throws fx::GraphError naming the nodes involved, and
// leaves the graph as it was.
#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

// Runs f, expects a GraphError whose message contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no fx::GraphError thrown";
  } catch (const fx::GraphError& e) {
    for (const auto& frag : fragments)
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what() << "\n  lacks: " << frag;
  }
}

TEST(GraphMisuse, EraseNodeWithUsers) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("torch.relu", {x});
  fx::Node* b = g.call_function("torch.neg", {x});
  g.output(fx::tuple({a, b}));
  expect_error([&] { g.erase_node(x); }, {"'x'", "2 user(s)", "'relu'", "'neg'", "replace_all_uses_with"});
  g.erase_node(g.output_node());
  g.erase_node(a);
  expect_error([&] { g.erase_node(a); }, {"'relu'", "already erased"});
  EXPECT_THROW(g.lint(), fx::LintError);  // no output any more; everything else is intact
  g.output(b);
  g.lint();
}

TEST(GraphMisuse, NodeOfAnotherGraph) {
  fx::Graph g1, g2;
  fx::Node* x = g1.placeholder("x");
  g2.placeholder("y");
  expect_error([&] { g2.call_function("torch.relu", {x}); },
               {"'x'", "another graph", "argument of <new node>", "node_copy"});
  EXPECT_EQ(g2.size(), 1u);
  fx::Node* y2 = g2.call_function("torch.relu", {fx::list({1})});
  expect_error([&] { y2->set_args({fx::tuple({x})}); }, {"'x'", "'relu'", "another graph"});
  expect_error([&] { g1.erase_node(y2); }, {"not a node of this graph"});
  expect_error([&] { auto at = g1.inserting_after(y2); }, {"not a live node of this graph"});
}

TEST(GraphMisuse, ErasedNodeAsArgument) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* r = g.call_function("torch.relu", {x});
  g.erase_node(r);
  expect_error([&] { g.call_function("torch.neg", {r}); }, {"'relu'", "erased"});
  expect_error([&] { r->set_args({x}); }, {"'relu'", "erased"});
}

TEST(GraphMisuse, SecondOutputAndNodesAfterTheOutput) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* r = g.call_function("torch.relu", {x});
  fx::Node* out = g.output(r);
  expect_error([&] { g.output(x); }, {"already has an output node", "'output'"});
  expect_error([&] { g.call_function("torch.neg", {x}); }, {"after the output node", "'output'"});
  expect_error([&] { out->append(r); }, {"'relu'", "after the output"});
  expect_error([&] { r->prepend(out); }, {"output", "last node"});
  {
    auto at = g.inserting_before(r);
    expect_error([&] { g.output(x); }, {"already has an output node"});
  }
  {
    auto at = g.inserting_before(out);
    g.call_function("torch.neg", {x});  // fine: before the output
  }
  g.lint();
}

TEST(GraphMisuse, OutputMustBeLast) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  auto at = g.inserting_before(x);
  expect_error([&] { g.output(x); }, {"must be the last node", "'x'"});
}

TEST(GraphMisuse, CyclesAndUsesBeforeDefinition) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("torch.relu", {x});
  fx::Node* b = g.call_function("torch.neg", {a});
  g.output(b);
  expect_error([&] { a->set_args({b}); }, {"'neg'", "'relu'", "before the definition", "cycle"});
  expect_error([&] { a->set_args({a}); }, {"'relu'", "itself", "cycle"});
  // Replacing x by b in relu would make relu read neg, which reads relu.
  expect_error([&] { x->replace_all_uses_with(b); }, {"'neg'", "'relu'"});
  EXPECT_EQ(a->args()[0].node(), x);  // nothing changed
  // The usual FX idiom: the new node reads the old one, so filter it out.
  fx::Node* c = [&] {
    auto at = g.inserting_after(a);
    return g.call_function("torch.sin", {a});
  }();
  expect_error([&] { a->replace_all_uses_with(c); }, {"'sin'", "itself"});
  a->replace_all_uses_with(c, [&](fx::Node* u) { return u != c; });
  EXPECT_EQ(b->args()[0].node(), c);
  expect_error([&] { b->append(c); }, {"'sin'", "after its user", "'neg'"});
  expect_error([&] { a->prepend(c); }, {"'sin'", "before its input", "'relu'"});
  g.lint();
}

TEST(GraphMisuse, EmptyTargetsAndNames) {
  fx::Graph g;
  expect_error([&] { g.call_function("", {}); }, {"empty target"});
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.create_node(fx::Op::placeholder, "x", {}, {}, "")->name(), "_unnamed");  // as FX 2.x names it
  EXPECT_EQ(g.create_node(fx::Op::placeholder, "x", {}, {}, "!!")->name(), "_");       // as FX sanitizes it
  EXPECT_THROW(fx::op_from_name("call_everything"), fx::Error);
  EXPECT_EQ(fx::op_from_name("call_module"), fx::Op::call_module);
}

}  // namespace
