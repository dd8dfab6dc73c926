// GraphModule made from a map of named submodules/tensors, and deep copies.
#include <fx/fx.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using fx::Value;

// A leaf module that copies itself: constructed anew, then copy_state_from.
struct Affine : fx::Module {
  int64_t n;
  at::Tensor weight, shift;
  explicit Affine(int64_t features) : fx::Module("Affine"), n(features) {
    weight = register_parameter("weight", torch::randn({n}));
    shift = register_buffer("shift", torch::randn({n}));
  }
  bool is_standard_leaf() const override { return true; }
  Value forward(const std::vector<Value>& in) override { return in[0] * weight + shift; }
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<c10::Device>& = c10::nullopt) const override {
    auto copy = std::make_shared<Affine>(n);
    copy->copy_state_from(*this);
    return copy;
  }
};

// The same, without clone(): it cannot be deep-copied.
struct Uncopyable : fx::Module {
  Uncopyable() : fx::Module("Uncopyable") {}
  bool is_standard_leaf() const override { return true; }
  Value forward(const std::vector<Value>& in) override { return in[0] + 1; }
};

// Affine leaves at a dotted path (the container traced through), a
// parameter, a buffer used twice and a tensor attribute.
struct Model : fx::Module {
  std::shared_ptr<Affine> first;
  std::shared_ptr<fx::nn::Sequential> blocks;
  at::Tensor w, scale, offset;
  Model() : fx::Module("Model") {
    first = register_module("first", std::make_shared<Affine>(4));
    blocks =
        register_module("blocks", std::make_shared<fx::nn::Sequential>(
                                      std::vector<std::shared_ptr<fx::Module>>{std::make_shared<Affine>(4)}));
    w = register_parameter("w", torch::randn({4}));
    scale = register_buffer("scale", torch::full({4}, 2.0));
    offset = register_attribute("offset", torch::randn({4}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value y = (*blocks)((*first)(in[0]) * w) * scale;
    return (y + offset) / scale;
  }
};

at::Tensor reference(Model& m, const at::Tensor& x) {
  auto& inner = dynamic_cast<Affine&>((*m.blocks)[0]);
  at::Tensor y = ((x * m.first->weight + m.first->shift) * m.w * inner.weight + inner.shift) * m.scale;
  return (y + m.offset) / m.scale;
}

// ---- construction from a map --------------------------------------------------

// graph(x): x * self.sub.w + self.b, then the module at blocks.lin.
std::unique_ptr<fx::Graph> map_graph() {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w = g->get_attr("sub.w");
  fx::Node* b = g->get_attr("b");
  fx::Node* mul = g->call_function("operator.mul", {x, w});
  fx::Node* add = g->call_function("operator.add", {mul, b});
  g->output(g->call_module("blocks.lin", {add}));
  return g;
}

TEST(GraphModuleFromMap, PlacesEachEntryAtItsPath) {
  auto lin = std::make_shared<Affine>(3);
  at::Tensor w = torch::randn({3}, torch::requires_grad()), b = torch::randn({3});
  fx::GraphModule gm({{"sub.w", fx::GraphModule::Attr::parameter(w)}, {"b", b}, {"blocks.lin", lin}},
                     map_graph());
  std::vector<std::string> params, buffers;
  for (const auto& p : gm.named_parameters()) params.push_back(p.key());
  for (const auto& p : gm.named_buffers()) buffers.push_back(p.key());
  // A plain tensor is a buffer, as torch.fx registers it; the rest are shared, not copied.
  EXPECT_EQ(params, (std::vector<std::string>{"sub.w", "blocks.lin.weight"}));
  EXPECT_EQ(buffers, (std::vector<std::string>{"b", "blocks.lin.shift"}));
  EXPECT_TRUE(gm.get_tensor("sub.w").is_same(w));
  EXPECT_TRUE(gm.get_tensor("sub.w").requires_grad());
  EXPECT_EQ(gm.get_submodule("blocks.lin"), lin.get());
  EXPECT_EQ(gm.get_submodule("blocks."), nullptr);  // as Python's getattr(blocks, ""): no such module
  EXPECT_EQ(gm.to_string(),
            "GraphModule(\n  (sub): Module()\n  (blocks): Module(\n    (lin): Affine()\n  )\n)\n\n\n\n"
            "def forward(self, x):\n    sub_w = self.sub.w\n    b = self.b\n"
            "    mul = x * sub_w;  x = sub_w = None\n    add = mul + b;  mul = b = None\n"
            "    blocks_lin = self.blocks.lin(add);  add = None\n    return blocks_lin\n    \n"
            "# To see more debug info, please use `graph_module.print_readable()`");
  at::Tensor x = torch::randn({2, 3});
  EXPECT_TRUE(torch::allclose(gm(x).tensor(), (x * w + b) * lin->weight + lin->shift));
}

TEST(GraphModuleFromMap, AModuleAtAShorterPathProvidesDeeperOnes) {
  // "blocks" is given and already holds "lin": the entry for blocks.lin is the same module.
  struct Holder : fx::Module {
    std::shared_ptr<Affine> lin = std::make_shared<Affine>(3);
    Holder() : fx::Module("Holder") { register_module("lin", lin); }
    Value forward(const std::vector<Value>& in) override { return (*lin)(in[0]); }
  };
  auto blocks = std::make_shared<Holder>();
  auto lin = blocks->lin;
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* weight = g->get_attr("blocks.lin.weight");
  fx::Node* y = g->call_module("blocks", {x});
  g->output(g->call_function("operator.add", {y, weight}));
  fx::GraphModule gm({{"blocks.lin.weight", lin->weight}, {"blocks", blocks}}, std::move(g));
  EXPECT_EQ(gm.get_submodule("blocks"), blocks.get());
  EXPECT_TRUE(gm.get_tensor("blocks.lin.weight").is_same(lin->weight));
  at::Tensor in = torch::randn({3});
  EXPECT_TRUE(torch::allclose(gm(in).tensor(), in * lin->weight + lin->shift + lin->weight));

  // A different tensor where the module given has one is ambiguous.
  auto g2 = std::make_unique<fx::Graph>();
  fx::Node* weight2 = g2->get_attr("lin.weight");
  g2->output(g2->call_module("lin", {weight2}));
  EXPECT_THROW(fx::GraphModule({{"lin", lin}, {"lin.weight", torch::zeros({3})}}, std::move(g2)), fx::Error);
}

TEST(GraphModuleFromMap, AMissingTargetNamesTheNode) {
  try {
    fx::GraphModule gm({{"b", torch::ones({3})}, {"blocks.lin", std::make_shared<Affine>(3)}}, map_graph());
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'sub_w'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'sub.w'"), std::string::npos) << msg;
  }
  EXPECT_THROW(fx::GraphModule({}, nullptr), fx::Error);
}

// ---- deep copy ----------------------------------------------------------------------

TEST(GraphModuleDeepCopy, SameCodeSameResultsOwnEverything) {
  torch::manual_seed(0);
  Model model;
  model.eval();
  auto gm = fx::symbolic_trace(model);
  std::unique_ptr<fx::GraphModule> copy = gm->deepcopy();
  EXPECT_EQ(copy->code(), gm->code());
  EXPECT_EQ(copy->to_string(), gm->to_string());
  EXPECT_EQ(copy->graph().to_string(), gm->graph().to_string());
  EXPECT_FALSE(copy->is_training());
  EXPECT_FALSE(copy->get_submodule("first")->is_training());
  at::Tensor x = torch::randn({5, 4});
  EXPECT_TRUE(torch::allclose((*copy)(x).tensor(), reference(model, x)));

  // Every module and tensor is the copy's own.
  EXPECT_NE(copy->get_submodule("first"), gm->get_submodule("first"));
  EXPECT_NE(copy->get_submodule("blocks.0"), gm->get_submodule("blocks.0"));
  EXPECT_NE(copy->get_submodule("blocks"), gm->get_submodule("blocks"));
  auto gp = gm->named_parameters(), cp = copy->named_parameters();
  ASSERT_EQ(gp.size(), cp.size());
  for (const auto& p : gp) {
    const at::Tensor* c = cp.find(p.key());
    ASSERT_NE(c, nullptr) << p.key();
    EXPECT_NE(c->data_ptr(), p.value().data_ptr()) << p.key();
    EXPECT_TRUE(torch::equal(*c, p.value())) << p.key();
    EXPECT_EQ(c->requires_grad(), p.value().requires_grad()) << p.key();
  }
  for (const char* path : {"scale", "offset", "first.shift", "blocks.0.shift"})
    EXPECT_NE(copy->get_tensor(path).data_ptr(), gm->get_tensor(path).data_ptr()) << path;

  // Changing the copy's weights leaves the original (and the model it shares them with) as it was.
  at::Tensor before = (*gm)(x).tensor();
  {
    torch::NoGradGuard no_grad;
    copy->get_tensor("w").add_(1.0);
    copy->get_tensor("first.weight").mul_(3.0);
    copy->get_tensor("offset").zero_();
  }
  EXPECT_TRUE(torch::equal((*gm)(x).tensor(), before));
  EXPECT_TRUE(torch::allclose(before, reference(model, x)));
  EXPECT_FALSE(torch::allclose((*copy)(x).tensor(), before));
}

TEST(GraphModuleDeepCopy, EditingTheCopysGraphLeavesTheOriginal) {
  Model model;
  auto gm = fx::symbolic_trace(model);
  const std::string code = gm->code(), text = gm->graph().to_string();
  auto copy = gm->deepcopy();
  for (fx::Node* n : copy->graph().nodes())
    if (n->op() == fx::Op::call_function && n->target() == "operator.truediv") n->set_target("operator.mul");
  copy->recompile();
  EXPECT_NE(copy->code(), code);
  EXPECT_EQ(gm->code(), code);
  EXPECT_EQ(gm->graph().to_string(), text);
  at::Tensor x = torch::randn({2, 4});
  EXPECT_TRUE(torch::allclose((*gm)(x).tensor(), reference(model, x)));
  EXPECT_EQ(&copy->graph().nodes().to_vector()[0]->graph(), &copy->graph());
  EXPECT_EQ(copy->graph().owning_module(), copy.get());
}

TEST(GraphModuleDeepCopy, AliasesStayAliases) {
  auto shared = std::make_shared<Affine>(3);
  at::Tensor w = torch::randn({3});
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* a = g->call_module("a", {x});
  fx::Node* b = g->call_module("b", {a});
  fx::Node* w1 = g->get_attr("w");
  fx::Node* w2 = g->get_attr("also_w");
  g->output(g->call_function("operator.add", {g->call_function("operator.add", {b, w1}), w2}));
  fx::GraphModule gm({{"a", shared}, {"b", shared}, {"w", w}, {"also_w", w}}, std::move(g));
  auto copy = gm.deepcopy();
  EXPECT_EQ(copy->get_submodule("a"), copy->get_submodule("b"));
  EXPECT_NE(copy->get_submodule("a"), shared.get());
  EXPECT_TRUE(copy->get_tensor("w").is_same(copy->get_tensor("also_w")));
  EXPECT_FALSE(copy->get_tensor("w").is_same(w));
  at::Tensor in = torch::randn({3});
  EXPECT_TRUE(torch::allclose((*copy)(in).tensor(), gm(in).tensor()));
}

TEST(GraphModuleDeepCopy, NestedGraphModulesCopyThroughClone) {
  torch::manual_seed(0);
  Model model;
  std::shared_ptr<fx::GraphModule> inner = fx::symbolic_trace(model);
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  g->output(g->call_method("relu", {g->call_module("stage.inner", {x})}));
  fx::GraphModule outer({{"stage.inner", inner}}, std::move(g), "Outer");
  auto copy = outer.deepcopy();
  EXPECT_EQ(copy->type_name(), "Outer");
  auto* inner_copy = dynamic_cast<fx::GraphModule*>(copy->get_submodule("stage.inner"));
  ASSERT_NE(inner_copy, nullptr);
  EXPECT_NE(inner_copy, inner.get());
  EXPECT_EQ(inner_copy->code(), inner->code());
  at::Tensor in = torch::randn({2, 4});
  EXPECT_TRUE(torch::allclose((*copy)(in).tensor(), outer(in).tensor()));
  {
    torch::NoGradGuard no_grad;
    inner_copy->get_tensor("w").fill_(0.0);
  }
  EXPECT_TRUE(torch::allclose(outer(in).tensor(), reference(model, in).relu()));

  // clone() is the same deep copy, through torch::nn::Module's interface.
  std::shared_ptr<torch::nn::Module> cloned = inner->clone();
  auto* as_gm = dynamic_cast<fx::GraphModule*>(cloned.get());
  ASSERT_NE(as_gm, nullptr);
  EXPECT_FALSE(as_gm->get_tensor("w").is_same(inner->get_tensor("w")));
  EXPECT_TRUE(torch::allclose((*as_gm)(in).tensor(), (*inner)(in).tensor()));
  auto on_cpu = std::dynamic_pointer_cast<fx::GraphModule>(inner->clone(torch::kCPU));
  ASSERT_NE(on_cpu, nullptr);
  EXPECT_TRUE(torch::allclose((*on_cpu)(in).tensor(), (*inner)(in).tensor()));
}

TEST(GraphModuleDeepCopy, AnUncopyableSubmoduleIsNamed) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  g->output(g->call_module("blocks.raw", {g->call_module("ok", {x})}));
  auto gm = std::make_shared<fx::GraphModule>(
      std::map<std::string, fx::GraphModule::Attr>{{"ok", std::make_shared<Affine>(2)},
                                                   {"blocks.raw", std::make_shared<Uncopyable>()}},
      std::move(g));
  try {
    gm->deepcopy();
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'blocks.raw'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Uncopyable"), std::string::npos) << msg;
    EXPECT_NE(msg.find("clone()"), std::string::npos) << msg;
  }
  // Nested: the message names the inner GraphModule's path and the path inside it.
  auto g2 = std::make_unique<fx::Graph>();
  g2->output(g2->call_module("stage", {g2->placeholder("x")}));
  fx::GraphModule outer({{"stage", gm}}, std::move(g2));
  try {
    outer.deepcopy();
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'stage'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'blocks.raw'"), std::string::npos) << msg;
  }
}

// ---- set_graph (torch.fx's `gm.graph = g`) and assign_attr ----------------------

TEST(GraphModuleSetGraph, TakesTheGraphAndRecompiles) {
  torch::manual_seed(0);
  Model m;
  auto gm = fx::symbolic_trace(m);
  at::Tensor x = torch::randn({4});
  gm->assign_attr("extra.bias", fx::GraphModule::Attr::parameter(torch::ones({4})));
  auto g = std::make_unique<fx::Graph>();
  fx::Node* in = g->placeholder("input");
  g->output(g->call_function("operator.add", {g->call_module("first", {in}), g->get_attr("extra.bias")}));
  gm->set_graph(std::move(g));
  EXPECT_NE(gm->code().find("def forward(self, input):"), std::string::npos) << gm->code();
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), x * m.first->weight + m.first->shift + 1));
  ASSERT_NE(gm->get_submodule("extra"), nullptr);
  EXPECT_EQ(gm->get_submodule("extra")->named_parameters(false).size(), 1u);
}

TEST(GraphModuleSetGraph, AMissingTargetLeavesTheOldGraph) {
  torch::manual_seed(0);
  Model m;
  auto gm = fx::symbolic_trace(m);
  const std::string code = gm->code();
  at::Tensor x = torch::randn({4});
  auto g = std::make_unique<fx::Graph>();
  g->output(g->get_attr("nowhere", {}));
  EXPECT_THROW(gm->set_graph(std::move(g)), fx::Error);
  EXPECT_EQ(gm->code(), code);
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), reference(m, x)));
  EXPECT_THROW(gm->set_graph(nullptr), fx::Error);
}

}  // namespace
