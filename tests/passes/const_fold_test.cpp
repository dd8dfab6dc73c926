// fx::passes::split_const_subgraphs against torch.fx 1.13's
// torch.fx.experimental.const_fold (const_fold_oracle.py, same models in
// Python): main graph, code and constant subgraph name for name; outputs
// allclose to the unfolded module's; folding runs once.
#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/passes/const_fold.h>
#include <fx/passes/pass_registry.h>

#include "simplify_test_util.h"

namespace {

using fx::Value;
using simplify_test::oracle;
namespace nn = fx::nn;

// Python's `self.<name>` on a parameter: a get_attr node while tracing.
Value param(std::string_view name, const at::Tensor& t) {
  if (fx::Tracer* tracer = fx::Tracer::current()) return tracer->getattr(name, t);
  return Value(t);
}

template <class M, class... A>
std::shared_ptr<M> make(A&&... a) {
  return std::make_shared<M>(std::forward<A>(a)...);
}

struct Simple : fx::Module {
  at::Tensor attr_1, attr_2;
  Simple() : fx::Module("Simple", {"x", "y"}) {
    attr_1 = register_parameter("attr_1", torch::tensor({{-0.9}}));
    attr_2 = register_parameter("attr_2", torch::tensor({{17.1}}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value a = param("attr_1", attr_1) + param("attr_1", attr_1);
    Value x = in[0] - a;
    Value xy = x * in[1];
    return xy + param("attr_2", attr_2);
  }
};

// A plain nn.Module() holding a parameter.
struct Holder : fx::Module {
  at::Tensor scale;
  Holder() : fx::Module("torch.nn.Module") { scale = register_parameter("scale", torch::randn({3})); }
  Value forward(const std::vector<Value>& in) override { return in[0]; }
};

struct Multi : fx::Module {
  std::shared_ptr<nn::Linear> lin;
  at::Tensor w;
  std::shared_ptr<Holder> sub;
  Multi() : fx::Module("Multi") {
    lin = register_module("lin", make<nn::Linear>(3, 3));
    w = register_parameter("w", torch::randn({3, 3}));
    sub = register_module("sub", make<Holder>());
  }
  Value forward(const std::vector<Value>& in) override {
    Value wt = param("w", w).t();
    Value s = fx::call("torch.relu", param("sub.scale", sub->scale)) * 2;
    Value l = (*lin)(in[0]);
    Value y = fx::call("operator.matmul", l, wt) + s;
    Value total = wt.sum();
    return Value::tuple({y + total, s});
  }
};

struct Modules : fx::Module {
  std::shared_ptr<nn::Sequential> layers;
  std::shared_ptr<nn::Linear> proj;
  at::Tensor w;
  Modules() : fx::Module("Modules") {
    layers = register_module("layers", make<nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                           make<nn::Linear>(4, 4), make<nn::ReLU>()}));
    proj = register_module("proj", make<nn::Linear>(4, 4));
    w = register_parameter("w", torch::randn({4, 4}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value k = (*proj)(param("w", w));
    return fx::call("operator.matmul", (*layers)(in[0]), k);
  }
};

struct Nothing : fx::Module {
  at::Tensor w;
  Nothing() : fx::Module("Nothing") { w = register_parameter("w", torch::randn({3})); }
  Value forward(const std::vector<Value>& in) override { return in[0] * w + 1; }
};

void check(fx::Module& model, const std::string& name, std::vector<c10::IValue> inputs) {
  auto traced = fx::symbolic_trace(model);
  c10::IValue before = traced->run(inputs);
  std::string traced_text = traced->graph().to_string();

  auto folded = fx::passes::split_const_subgraphs(*traced);
  EXPECT_EQ(folded->graph().to_string(), oracle(name, "graph"));
  EXPECT_EQ(folded->code(), oracle(name, "code"));
  EXPECT_EQ(traced->graph().to_string(), traced_text);  // the input is left as it was
  folded->graph().lint();
  ASSERT_TRUE(folded->has_const_subgraph());
  EXPECT_EQ(folded->const_subgraph_module()->graph().to_string(), oracle(name, "const_graph"));
  EXPECT_EQ(*folded->fx_const_folded_attrs_name(), oracle(name, "attrs_name"));

  EXPECT_FALSE(folded->has_folding_been_run());
  fx::GraphModule& as_graph_module = *folded;  // what a pass manager holds: folding happens all the same
  simplify_test::expect_allclose(before, as_graph_module.run(inputs));
  EXPECT_TRUE(folded->has_folding_been_run());
  EXPECT_FALSE(folded->folded_attrs().empty());
  // Folded once: the second run reads the same folded tensors.
  const void* data = folded->folded_attrs()[0].data_ptr();
  simplify_test::expect_allclose(before, folded->run(inputs));
  EXPECT_EQ(folded->folded_attrs()[0].data_ptr(), data);
  // Through forward (fx::Values) too.
  std::vector<Value> args(inputs.begin(), inputs.end());
  simplify_test::expect_allclose(before, folded->forward(args).ivalue());
}

TEST(ConstFold, SimpleAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  Simple m;
  check(m, "Simple", {torch::rand({2, 1}), torch::rand({2, 1})});
}

TEST(ConstFold, SeveralFoldedValuesAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  Multi m;
  check(m, "Multi", {torch::rand({2, 3})});
}

TEST(ConstFold, ModulesAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  Modules m;
  check(m, "Modules", {torch::rand({2, 4})});
}

TEST(ConstFold, NothingToFold) {
  SKIP_WITHOUT_ORACLE();
  Nothing m;
  auto folded = fx::passes::split_const_subgraphs(m);
  EXPECT_EQ(folded->graph().to_string(), oracle("Nothing", "graph"));
  EXPECT_FALSE(folded->has_const_subgraph());
  EXPECT_FALSE(folded->fx_const_folded_attrs_name());
  at::Tensor x = torch::rand({3});
  folded->run_folding();  // nothing to do
  EXPECT_FALSE(folded->has_folding_been_run());
  simplify_test::expect_allclose(fx::symbolic_trace(m)->run({x}), folded->run({x}));
}

// skip_folding_node_fn keeps a node (and what depends on it) unfolded.
TEST(ConstFold, SkipFoldingNode) {
  Simple m;
  auto folded =
      fx::passes::split_const_subgraphs(m, [](const fx::Node& n) { return n.op() == fx::Op::call_function; });
  EXPECT_FALSE(folded->has_const_subgraph());
}

// Random calls are never folded: each run draws anew.
TEST(ConstFold, RandomIsNotFolded) {
  struct Random : fx::Module {
    at::Tensor w;
    Random() : fx::Module("Random") { w = register_parameter("w", torch::ones({3})); }
    Value forward(const std::vector<Value>& in) override {
      return in[0] + fx::call("torch.rand_like", param("w", w));
    }
  } m;
  auto folded = fx::passes::split_const_subgraphs(m);
  EXPECT_FALSE(folded->has_const_subgraph());
}

// A constant part whose value is no tensor or number (here a dtype) cannot
// be folded into an attribute, as in torch.fx: an fx::Error that says so.
TEST(ConstFold, ADtypeIsNotFoldedIntoATensor) {
  struct CastLike : fx::Module {
    at::Tensor w;
    CastLike() : fx::Module("CastLike") { w = register_parameter("w", torch::ones({3}, torch::kFloat64)); }
    Value forward(const std::vector<Value>& in) override { return in[0].call_method("to", {param("w", w).dtype()}); }
  } m;
  auto folded = fx::passes::split_const_subgraphs(m);
  ASSERT_TRUE(folded->has_const_subgraph());
  try {
    folded->run_folding();
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("of the constant subgraph is a dtype"), std::string::npos) << e.what();
  }
  // Unfolded, the dtype is one at run time: x becomes float64.
  EXPECT_EQ(fx::symbolic_trace(m)->run({torch::ones({3})}).toTensor().scalar_type(), torch::kFloat64);
}

// An unused in-place call in the non-constant part survives folding: x
// changes as it does without folding.
TEST(ConstFold, KeepsUnusedInPlaceCall) {
  struct AddInPlace : fx::Module {
    at::Tensor w;
    AddInPlace() : fx::Module("AddInPlace") { w = register_parameter("w", torch::ones({3})); }
    Value forward(const std::vector<Value>& in) override {
      Value add = param("w", w) + param("w", w);
      in[0].call_method("add_", {1});
      return in[0] - add;
    }
  } m;
  auto gm = fx::symbolic_trace(m);
  auto folded = fx::passes::split_const_subgraphs(*gm);
  ASSERT_TRUE(folded->has_const_subgraph());
  EXPECT_NE(folded->code().find("x.add_(1)"), std::string::npos) << folded->code();
  at::Tensor x = torch::zeros({3}), x_unfolded = torch::zeros({3});
  at::Tensor y = folded->run({x}).toTensor();
  at::Tensor y_unfolded = gm->run({x_unfolded}).toTensor();
  EXPECT_TRUE(torch::equal(x, x_unfolded)) << x;
  EXPECT_TRUE(torch::equal(x, torch::ones({3})));
  EXPECT_TRUE(torch::equal(y, y_unfolded));
  // fxc opt -p fold runs the same pass in place.
  auto again = fx::symbolic_trace(m);
  ASSERT_TRUE(fx::passes::find_pass("fold").run(*again, {}));
  EXPECT_NE(again->code().find("x.add_(1)"), std::string::npos) << again->code();
}

// A parameter written through a view is not a constant: everything computed
// from it stays in the main graph and sees each run's new value.
TEST(ConstFold, ValueWrittenThroughAViewIsNotFolded) {
  struct ViewWrite : fx::Module {
    at::Tensor w;
    ViewWrite() : fx::Module("ViewWrite") { w = register_parameter("w", torch::ones({2, 2})); }
    Value forward(const std::vector<Value>& in) override {
      Value twice = param("w", w) * 2;
      param("w", w).call_method("view", {-1}).call_method("add_", {1});
      return in[0] + twice;
    }
  };
  torch::NoGradGuard no_grad;  // add_ on a leaf parameter
  ViewWrite unfolded_model, folded_model;
  auto gm = fx::symbolic_trace(unfolded_model);
  auto folded = fx::passes::split_const_subgraphs(folded_model);
  EXPECT_FALSE(folded->has_const_subgraph()) << folded->code();
  at::Tensor x = torch::zeros({2, 2});
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(torch::equal(folded->run({x}).toTensor(), gm->run({x}).toTensor())) << "run " << run;
}

// A random call inside the constant part stays in the main graph, while the
// pure computation beside it is folded.
TEST(ConstFold, RandomInsideTheConstantPart) {
  struct RandomBeside : fx::Module {
    at::Tensor w;
    RandomBeside() : fx::Module("RandomBeside") { w = register_parameter("w", torch::ones({3})); }
    Value forward(const std::vector<Value>& in) override {
      Value noise = fx::call("torch.rand_like", param("w", w) * 2);
      return in[0] + noise + param("w", w).exp();
    }
  } m;
  auto folded = fx::passes::split_const_subgraphs(m);
  ASSERT_TRUE(folded->has_const_subgraph());
  const std::string code = folded->code();
  EXPECT_NE(code.find("torch.rand_like"), std::string::npos) << code;
  EXPECT_EQ(code.find(".exp()"), std::string::npos) << code;  // folded
  at::Tensor x = torch::zeros({3});
  EXPECT_FALSE(torch::equal(folded->run({x}).toTensor(), folded->run({x}).toTensor()));  // draws each run
}

// ---- in place, as the pass registry's "fold" -----------------------------------

std::vector<std::string> get_attr_targets(const fx::GraphModule& gm) {
  std::vector<std::string> out;
  for (const fx::Node* n : gm.graph().nodes())
    if (n->op() == fx::Op::get_attr) out.push_back(n->target().str());
  return out;
}

TEST(ConstFoldInPlace, OneFoldedValueIsAParameter) {
  Simple m;
  auto gm = fx::symbolic_trace(m);
  std::vector<c10::IValue> inputs{torch::rand({2, 1}), torch::rand({2, 1})};
  c10::IValue before = gm->run(inputs);
  ASSERT_TRUE(fx::passes::find_pass("fold").run(*gm, {}));
  gm->graph().lint();
  EXPECT_EQ(get_attr_targets(*gm), (std::vector<std::string>{"attr_2", "_FX_CONST_FOLDED_ATTRS"}))
      << gm->code();
  EXPECT_TRUE(torch::allclose(gm->get_tensor("_FX_CONST_FOLDED_ATTRS"), torch::tensor({{-1.8}})));
  simplify_test::expect_allclose(before, gm->run(inputs));
  EXPECT_FALSE(fx::passes::fold_constants(*gm));  // nothing left to fold
}

// Several folded values: one parameter each under an empty container, so
// that the module is a plain GraphModule a file holds.
TEST(ConstFoldInPlace, SeveralFoldedValuesGoThroughAFile) {
  torch::manual_seed(0);
  Multi m;
  auto gm = fx::symbolic_trace(m);
  std::vector<c10::IValue> inputs{torch::rand({2, 3})};
  c10::IValue before = gm->run(inputs);
  ASSERT_TRUE(fx::passes::fold_constants(*gm));
  gm->graph().lint();
  for (const std::string& t : get_attr_targets(*gm))
    EXPECT_EQ(t.rfind("_FX_CONST_FOLDED_ATTRS.", 0), 0u) << gm->code();
  EXPECT_EQ(gm->code().find("relu"), std::string::npos) << gm->code();  // computed once, at folding
  simplify_test::expect_allclose(before, gm->run(inputs));
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  EXPECT_EQ(loaded->code(), gm->code());
  simplify_test::expect_allclose(before, loaded->run(inputs));
}

// The split flattens the call_module targets of nested modules
// (`layers.0` is called as `layers_0`): gm gets those paths too.
TEST(ConstFoldInPlace, FlattenedModuleTargets) {
  torch::manual_seed(0);
  Modules m;
  auto gm = fx::symbolic_trace(m);
  std::vector<c10::IValue> inputs{torch::rand({2, 4})};
  c10::IValue before = gm->run(inputs);
  ASSERT_TRUE(fx::passes::fold_constants(*gm));
  gm->graph().lint();
  EXPECT_EQ(gm->code().find("self.proj"), std::string::npos) << gm->code();  // proj(w) is folded
  EXPECT_NE(gm->code().find("self.layers_0("), std::string::npos) << gm->code();
  simplify_test::expect_allclose(before, gm->run(inputs));
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  simplify_test::expect_allclose(before, loaded->run(inputs));
}

TEST(ConstFoldInPlace, NothingToFoldChangesNothing) {
  Nothing m;
  auto gm = fx::symbolic_trace(m);
  const std::string code = gm->code();
  EXPECT_FALSE(fx::passes::fold_constants(*gm));
  EXPECT_EQ(gm->code(), code);
}

}  // namespace
