// Editing graphs through the public API, with FX's semantics.
#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

std::vector<std::string> names(const std::vector<fx::Node*>& ns) {
  std::vector<std::string> out;
  for (fx::Node* n : ns) out.push_back(n->name());
  return out;
}
std::vector<std::string> names(const fx::Graph& g) { return names(g.nodes().to_vector()); }

TEST(GraphEdit, UsersAreInsertionOrderedAndDeduplicated) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("operator.add", {x, x});
  fx::Node* b = g.call_function("operator.mul", {x, a}, {{"k", x}});
  EXPECT_EQ(x->num_users(), 2u);
  EXPECT_EQ(names(x->users().to_vector()), (std::vector<std::string>{"add", "mul"}));
  EXPECT_EQ(names(b->all_input_nodes()), (std::vector<std::string>{"x", "add"}));
  // Re-setting args moves the user to the end, as FX's dict-based users do.
  a->set_args({x, 2});
  EXPECT_EQ(names(x->users().to_vector()), (std::vector<std::string>{"mul", "add"}));
  b->set_kwargs({});
  b->set_args({a, a});
  EXPECT_EQ(names(x->users().to_vector()), (std::vector<std::string>{"add"}));
  EXPECT_TRUE(a->users().contains(b));
}

TEST(GraphEdit, UpdateArgAndKwarg) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.placeholder("y");
  fx::Node* c = g.call_method("clamp", {x}, {{"min", 0.0}});
  c->update_arg(0, y);
  c->update_kwarg("min", 1.0);
  c->update_kwarg("max", x);
  EXPECT_EQ(c->format_node(),
            "%clamp : [num_users=0] = call_method[target=clamp](args = (%y,), kwargs = {min: 1.0, max: %x})");
  EXPECT_EQ(x->num_users(), 1u);
  ASSERT_NE(c->kwarg("max"), nullptr);
  EXPECT_EQ(c->kwarg("max")->node(), x);
  EXPECT_EQ(c->kwarg("nope"), nullptr);
  EXPECT_THROW(c->update_arg(5, 1), fx::GraphError);
}

TEST(GraphEdit, ReplaceAllUsesWithFilterAndMeta) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.placeholder("y");
  fx::Node* a = g.call_function("torch.relu", {x});
  fx::Node* b = g.call_function("torch.neg", {x});
  x->meta().set("tensor_meta", std::string("f32[3]"));
  auto changed = x->replace_all_uses_with(
      y, [&](fx::Node* u) { return u != b; }, /*propagate_meta=*/true);
  EXPECT_EQ(names(changed), (std::vector<std::string>{"relu"}));
  EXPECT_EQ(a->args()[0].node(), y);
  EXPECT_EQ(b->args()[0].node(), x);
  ASSERT_NE(y->meta().get<std::string>("tensor_meta"), nullptr);
  EXPECT_EQ(*y->meta().get<std::string>("tensor_meta"), "f32[3]");
  b->replace_input_with(x, y);
  EXPECT_EQ(x->num_users(), 0u);
  EXPECT_EQ(y->num_users(), 2u);
}

TEST(GraphEdit, ReplaceInputWithReachesNestedArgumentsAndKwargs) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.placeholder("y");
  fx::Node* z = g.placeholder("z");
  fx::Node* cat = g.call_function("torch.cat", {fx::List{{x, z, x}}}, {{"dim", 0}});
  fx::Node* add = g.call_function("torch.add", {z, 1}, {{"other", x}, {"alpha", 2}});
  fx::Node* later = g.call_function("torch.neg", {cat});
  cat->replace_input_with(x, y);
  add->replace_input_with(x, y);
  const std::string cat_after =
      "%cat : [num_users=1] = call_function[target=torch.cat](args = ([%y, %z, %y],), kwargs = {dim: 0})";
  EXPECT_EQ(cat->format_node(), cat_after);
  EXPECT_EQ(add->format_node(),
            "%add : [num_users=0] = call_function[target=torch.add](args = (%z, 1), "
            "kwargs = {other: %y, alpha: 2})");
  EXPECT_EQ(x->num_users(), 0u);
  EXPECT_EQ(y->num_users(), 2u);
  EXPECT_EQ(z->num_users(), 2u);
  add->replace_input_with(x, y);  // holds no x: nothing changes
  EXPECT_EQ(y->num_users(), 2u);
  // A replacement defined after the user is refused, and nothing changes.
  EXPECT_THROW(cat->replace_input_with(z, later), fx::GraphError);
  EXPECT_EQ(cat->format_node(), cat_after);
  EXPECT_EQ(later->num_users(), 0u);
  g.output(later);
  g.lint();
}

TEST(GraphEdit, InsertingBeforeAndAfterLikeFx) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* out = g.output(x);
  {
    auto at = g.inserting_after(x);
    g.call_function("torch.relu", {x});  // relu
    g.call_function("torch.neg", {x});   // neg goes right after x, before relu
  }
  {
    auto at = g.inserting_before(out);
    g.call_function("torch.sin", {x});
  }
  {
    auto at = g.inserting_before(nullptr);  // the very beginning
    g.placeholder("first");
  }
  EXPECT_EQ(names(g), (std::vector<std::string>{"first", "x", "neg", "relu", "sin", "output"}));
  EXPECT_EQ(names(g.nodes().reversed().to_vector()),
            (std::vector<std::string>{"output", "sin", "relu", "neg", "x", "first"}));
  EXPECT_EQ(out->prev()->name(), "sin");
  EXPECT_EQ(out->next(), nullptr);
  EXPECT_EQ(g.nodes().begin().operator*()->prev(), nullptr);
  g.lint();
}

TEST(GraphEdit, MovingNodes) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("torch.relu", {x});
  fx::Node* b = g.call_function("torch.neg", {x});
  fx::Node* c = g.call_function("torch.sin", {x});
  g.output(fx::tuple({a, b, c}));
  a->prepend(c);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "sin", "relu", "neg", "output"}));
  b->append(a);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "sin", "neg", "relu", "output"}));
  EXPECT_TRUE(c->is_before(b));
  g.lint();
}

TEST(GraphEdit, ManyInsertionsAtOnePlaceKeepOrder) {
  // Inserting before the output again and again exhausts gaps between order
  // keys; renumbering must keep is_before right.
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* out = g.output(x);
  auto at = g.inserting_before(out);
  fx::Node* prev = x;
  std::vector<fx::Node*> made;
  for (int i = 0; i < 5000; ++i) made.push_back(prev = g.call_function("operator.add", {prev, 1}));
  out->set_args({prev});
  for (size_t i = 1; i < made.size(); ++i) ASSERT_TRUE(made[i - 1]->is_before(made[i]));
  // And inserting right after one node over and over (the reverse-order case).
  auto after = g.inserting_after(x);
  for (int i = 0; i < 5000; ++i) g.call_function("torch.relu", {x});
  g.lint();
}

TEST(GraphEdit, EraseWhileIterating) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  for (int i = 0; i < 5; ++i) g.call_function("torch.relu", {x});
  g.output(x);
  for (fx::Node* n : g.nodes())
    if (n->op() == fx::Op::call_function) g.erase_node(n);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "output"}));
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(x->num_users(), 1u);
  EXPECT_TRUE(g.find_nodes(fx::Op::call_function, "torch.relu").empty());
}

TEST(GraphEdit, FindNodesByOpAndTarget) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* r1 = g.call_function("torch.relu", {x});
  g.call_method("relu", {x});
  fx::Node* r2 = g.call_function("torch.relu", {r1});
  g.output(r2);
  EXPECT_EQ(names(g.find_nodes(fx::Op::call_function, "torch.relu")),
            (std::vector<std::string>{"relu", "relu_2"}));
  EXPECT_EQ(names(g.find_nodes(fx::Op::call_method, "relu")), (std::vector<std::string>{"relu_1"}));
  EXPECT_TRUE(g.find_nodes(fx::Op::call_module, "relu").empty());
  EXPECT_EQ(g.output_node()->name(), "output");
}

TEST(GraphEdit, DeadCodeEliminationKeepsImpureNodes) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* unused = g.placeholder("unused");
  fx::Node* dead = g.call_function("torch.relu", {x});
  g.call_function("torch.neg", {dead});
  g.call_function("torch._assert", {x, "msg"});
  fx::register_side_effect("my.logging.log");
  g.call_function("my.logging.log", {x});
  g.output(x);
  EXPECT_TRUE(g.eliminate_dead_code());
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "unused", "_assert", "log", "output"}));
  EXPECT_FALSE(g.eliminate_dead_code());
  EXPECT_TRUE(unused->is_impure());
}

TEST(GraphEdit, ImpureModulesComeFromTheOwningModule) {
  struct Owner : fx::OwningModule {
    bool has_submodule(std::string_view) const override { return true; }
    bool has_attribute(std::string_view) const override { return true; }
    fx::Impurity module_impurity(const fx::Target& t) const override {
      return t == "logger" ? fx::Impurity::side_effect : fx::Impurity::none;
    }
  } owner;
  fx::Graph g;
  g.set_owning_module(&owner);
  fx::Node* x = g.placeholder("x");
  g.call_module("logger", {x});
  g.call_module("linear", {x});
  g.output(x);
  g.eliminate_dead_code();
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "logger", "output"}));
}

TEST(GraphEdit, NodeCopyAndGraphCopy) {
  fx::Graph src;
  fx::Node* x = src.placeholder("x", fx::Argument(1.5), "torch.Tensor");
  fx::Node* a = src.call_function("operator.add", {x, 1});
  a->meta().set("k", 7);
  src.output(fx::tuple({a, x}));

  fx::Graph dst;
  std::unordered_map<const fx::Node*, fx::Node*> val_map;
  const fx::Node* src_out = nullptr;
  fx::Argument out = dst.graph_copy(src, val_map, &src_out);
  dst.output(out);
  EXPECT_EQ(src_out, src.output_node());
  EXPECT_EQ(dst.to_string(), src.to_string());
  EXPECT_EQ(dst.python_code().src, src.python_code().src);
  ASSERT_NE(val_map[a]->meta().get<int>("k"), nullptr);
  EXPECT_EQ(*val_map[a]->meta().get<int>("k"), 7);
  dst.lint();

  // Copying into a graph that already uses the names dedups them.
  fx::Graph twice;
  std::unordered_map<const fx::Node*, fx::Node*> m1, m2;
  twice.graph_copy(src, m1);
  twice.graph_copy(src, m2);
  EXPECT_EQ(m2[a]->name(), "add_1");
  EXPECT_THROW(src.graph_copy(src, m1), fx::GraphError);
}

}  // namespace

namespace {

TEST(GraphEdit, SetTargetKeepsTheNameAndReindexes) {
  // The FX tutorial's transformation: relu -> gelu by assigning the target.
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* r = g.call_function("torch.relu", {g.call_module("linear1", {x})});
  g.output(r);
  r->set_target("torch.nn.functional.gelu");
  EXPECT_EQ(r->name(), "relu");
  EXPECT_TRUE(g.find_nodes(fx::Op::call_function, "torch.relu").empty());
  EXPECT_EQ(g.find_nodes(fx::Op::call_function, "torch.nn.functional.gelu").size(), 1u);
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, x):\n    linear1 = self.linear1(x);  x = None\n"
            "    relu = torch.nn.functional.gelu(linear1);  linear1 = None\n    return relu\n    ");
  EXPECT_THROW(r->set_target(""), fx::GraphError);
}

}  // namespace

namespace {

TEST(GraphEdit, PositionsHoldWhateverRunsAfterThem) {
  fx::Graph g, other;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.call_function("torch.relu", {x});
  fx::Node* out = g.output(y);
  fx::Node* stranger = other.placeholder("x");
  std::vector<fx::Node*> order = g.nodes().to_vector();
  const auto pos = g.positions(order);
  EXPECT_EQ(pos.of(x), 0u);
  EXPECT_EQ(pos.of(y), 1u);
  EXPECT_EQ(pos.of(out), 2u);
  EXPECT_EQ(pos.of(stranger), std::nullopt);  // another graph's node
  // Analyses keep their state apart from the nodes: nothing run after
  // the table changes it.
  const auto again = g.positions({out, y});
  g.last_uses(order);
  g.lint();
  (void)g.python_code("self");
  EXPECT_EQ(pos.of(y), 1u);
  EXPECT_EQ(again.of(y), 1u);
  EXPECT_EQ(again.of(x), std::nullopt);  // not in that order
  // A node made after the table has no position in it.
  auto at = g.inserting_before(out);
  EXPECT_EQ(pos.of(g.call_function("torch.neg", {y})), std::nullopt);
}

TEST(GraphEdit, NodeIndicesAreDenseAndNeverReused) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.call_function("torch.relu", {x});
  g.output(y);
  EXPECT_LT(x->index(), y->index());
  EXPECT_LT(y->index(), g.index_bound());
  const uint32_t old = y->index();
  fx::Node* z = nullptr;
  {
    auto at = g.inserting_before(y);
    z = g.call_function("torch.neg", {x});
  }
  y->replace_all_uses_with(z);
  g.erase_node(y);
  auto at = g.inserting_before(z);
  EXPECT_GT(g.call_function("torch.sin", {x})->index(), old);
  const fx::Node* cos = g.call_function("torch.cos", {x});  // before index_bound(): C++ leaves the order open
  EXPECT_EQ(g.index_bound(), static_cast<size_t>(cos->index()) + 1);
}

}  // namespace
