// Symbolic tracing of C++ models, compared with what torch.fx 2.14 records
// for the Python originals in models.py (expected texts from oracle.py).
#include "models.h"

#include <fx/graph_appending_tracer.h>
#include <fx/fx.h>
#include <fx/state_dict.h>
#include <fx/nn.h>
#include <fx/tracer.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace {

using namespace fxcpp_test;
using fx::kw;
using fx::Value;
using fx::nn::BatchNorm2d;
using fx::nn::Conv2d;
using fx::nn::Linear;

struct MyModel : fx::Module {
  at::Tensor param;
  std::shared_ptr<Linear> linear;
  MyModel() : fx::Module("MyModel") {
    param = register_parameter("param", torch::rand({3, 4}));
    linear = register_module("linear", make<Linear>(4, 5));
  }
  Value forward(const std::vector<Value>& in) override {
    return (*linear)(in[0] + param).clamp(kw("min", 0.0), kw("max", 1.0));
  }
};

struct Operations : fx::Module {
  Operations() : fx::Module("Operations", {"x", "y", {"scale", 2.0}}) {}
  Value forward(const std::vector<Value>& in) override {
    const Value &x = in[0], &y = in[1], &scale = in[2];
    Value b = x.size(0);
    Value h = x.view(b, -1);
    auto ac = h.chunk(2, kw("dim", 1)).unpack(2);
    Value z = fx::call("torch.cat", Value::list({ac[0], ac[1]}), kw("dim", 1)) * scale;
    z = 2 - z;
    z = 1 / (z + 1e-05);
    z = -z;
    Value s = z[Value::tuple({Value::slice(fx::None, fx::None), Value::slice(0, 2)})];
    Value t = z[Value::tuple({fx::Ellipsis, fx::None})];
    Value m = x.shape()[1];
    Value w = fx::matmul_op(fx::call("torch.matmul", y, y.t()), y);
    Value q = fx::pow(s.sum(kw("dim", -1), kw("keepdim", true)), 2);
    q = fx::floordiv(q, 3) % 5;
    Value r = t.flatten(1).mean(kw("dim", 1)) > 0.5;
    return Value::tuple({q, r, m, w, fx::call("torch.nn.functional.gelu", z, kw("approximate", "tanh"))});
  }
};

// Python functions of torch called as C++ writes them naturally, without
// the keywords torch.fx records.
struct FunctionalDefaults : fx::Module {
  FunctionalDefaults() : fx::Module("FunctionalDefaults") {}
  Value forward(const std::vector<Value>& in) override {
    const std::string F = "torch.nn.functional.";
    Value up = fx::call(F + "interpolate", in[0], kw("scale_factor", 2), kw("mode", "nearest"));
    Value p = fx::call(F + "softmax", up, kw("dim", -1));
    auto pooled = fx::call(F + "max_pool2d", p, 2, kw("return_indices", true)).unpack(2);
    Value q = fx::call(F + "max_pool2d", p, kw("kernel_size", 2), kw("stride", 1));
    Value n = fx::call("torch.norm", q, kw("dim", -1));
    Value parts = fx::call("torch.split", n, 2, 1);
    Value old = fx::call(F + "upsample", in[0], kw("size", Value::tuple({4, 4})));
    auto unique = fx::call("torch.unique", pooled[1], kw("return_counts", true)).unpack(2);
    return Value::tuple({pooled[0], pooled[1], fx::call(F + "relu", parts[0]), old.norm(kw("dim", 1)),
                         fx::call(F + "dropout", q, 0.2, kw("training", false)), unique[0], unique[1]});
  }
};

// A forward returning a dict, as detection heads do.
struct DetectionHead : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> cls, box;
  DetectionHead() : fx::Module("DetectionHead") {
    cls = register_module("cls", make<fx::nn::Conv2d>(4, 3, std::vector<int64_t>{1, 1}));
    box = register_module("box", make<fx::nn::Conv2d>(4, 4, std::vector<int64_t>{1, 1}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value logits = (*cls)(in[0]);
    return Value::dict({{"logits", logits},
                        {"scores", logits.sigmoid()},
                        {"boxes", (*box)(in[0]).flatten(2)},
                        {"count", in[0].size(0)}});
  }
};

struct Sequence : fx::Module {
  std::shared_ptr<fx::nn::Sequential> features;
  std::shared_ptr<fx::nn::Flatten> flatten;
  Sequence() : fx::Module("Sequence") {
    features =
        register_module("features", make<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                        make<Linear>(4, 4), make<fx::nn::ReLU>(),
                                        make<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                            make<fx::nn::Dropout>(0.1), make<fx::nn::Identity>()})}));
    flatten = register_module("flatten", make<fx::nn::Flatten>());
  }
  Value forward(const std::vector<Value>& in) override { return (*flatten)((*features)(in[0])); }
};

// A module registered under two names and a parameter held by two modules:
// FX names each by its first path in named_modules() / named_parameters().
struct Holder : fx::Module {
  at::Tensor w;
  explicit Holder(at::Tensor shared) : fx::Module("Holder") { w = register_parameter("w", std::move(shared)); }
  Value forward(const std::vector<Value>&) override { throw fx::Error("Holder has no forward"); }
};

struct Shared : fx::Module {
  std::shared_ptr<Linear> a;
  std::shared_ptr<Holder> holder;
  Shared() : fx::Module("Shared") {
    a = register_module("a", make<Linear>(4, 4));
    register_module("b", a);
    holder = register_module("holder", make<Holder>(a->weight));
  }
  Value forward(const std::vector<Value>& in) override {
    return (*a)(in[0]) + holder->w;
  }
};

template <class M, class T = fx::Tracer>
void expect_same_trace(const std::string& name) {
  if (expected().is_null())
    GTEST_SKIP() << "the torch.fx oracle did not run (" << FXCPP_TRACE_EXPECTED << ")";
  ASSERT_TRUE(expected().contains(name)) << name;
  M model;
  T tracer;
  std::unique_ptr<fx::Graph> g = tracer.trace(model);
  g->lint();
  EXPECT_EQ(g->to_string(), expected().at(name).at("graph").get<std::string>());
  EXPECT_EQ(g->python_code().src, expected().at(name).at("code").get<std::string>());
}

TEST(Trace, SeedTutorialMyModel) { expect_same_trace<MyModel>("my_model"); }
TEST(Trace, SimpleNet) { expect_same_trace<SimpleNet>("simple_net"); }
TEST(Trace, ResNetBasicBlock) { expect_same_trace<BasicBlock>("basic_block"); }
TEST(Trace, ParametersBuffersAndTensorAttributes) { expect_same_trace<Attributes>("attributes"); }
TEST(Trace, ComputationsOnParametersAloneAreRecorded) { expect_same_trace<ParameterMath>("parameter_math"); }

// The traced graph reads its parameters when it runs: it follows a new
// state dict and an optimizer step, as the model does.
TEST(Trace, ATracedModelFollowsItsParameters) {
  torch::manual_seed(0);
  ParameterMath model;
  auto gm = fx::symbolic_trace(model);
  const auto x = torch::randn({2, 4});
  auto same = [&] {
    return torch::allclose(gm->forward({x}).tensor(), model.forward({x}).tensor(), 1e-5, 1e-6);
  };
  EXPECT_TRUE(same());

  // load_state_dict: another model's values, through a file.
  torch::manual_seed(1);
  ParameterMath other;
  const std::string path = ::testing::TempDir() + "/parameter_math.pt";
  fx::save_state_dict(other, path);
  fx::load_state_dict(*gm, path);
  fx::load_state_dict(model, path);
  EXPECT_TRUE(same());
  EXPECT_TRUE(torch::allclose(gm->forward({x}).tensor(), other.forward({x}).tensor(), 1e-5, 1e-6));

  // An optimizer step on the GraphModule's parameters moves its output.
  const auto before = gm->forward({x}).tensor().detach().clone();
  torch::optim::SGD sgd(gm->parameters(), torch::optim::SGDOptions(0.1));
  gm->forward({x}).tensor().sum().backward();
  ASSERT_TRUE(gm->named_parameters()["logit_scale"].grad().defined());
  sgd.step();
  EXPECT_FALSE(torch::allclose(gm->forward({x}).tensor(), before));
}

TEST(Trace, TensorConstantsTakeTheFirstFreeNames) { expect_same_trace<Constants>("constants"); }
TEST(Trace, OperatorsMethodsKwargsIndexing) { expect_same_trace<Operations>("operations"); }
TEST(Trace, PythonFunctionsOfTorchRecordTheirKeywords) {
  expect_same_trace<FunctionalDefaults>("functional_defaults");
  // The recorded calls run, and give what the same calls give eagerly.
  FunctionalDefaults m;
  auto gm = fx::symbolic_trace(m);
  const auto x = torch::randn({1, 2, 4, 4});
  const auto got = gm->forward({x}).items(), want = m.forward({x}).items();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::allclose(got[i].tensor(), want[i].tensor())) << i;
  // A symbolic flag of a boolean dispatch is data-dependent control flow, as in Python.
  struct SymbolicFlag : fx::Module {
    SymbolicFlag() : fx::Module("SymbolicFlag", {"x", "flag"}) {}
    Value forward(const std::vector<Value>& in) override {
      return fx::call("torch.nn.functional.max_pool2d", in[0], 2, kw("return_indices", in[1]));
    }
  } symbolic;
  EXPECT_THROW(fx::symbolic_trace(symbolic), fx::TraceError);
  // torch.unique dispatches on return_inverse, then again on return_counts in
  // either branch: a symbolic return_counts is control flow too.
  struct SymbolicInnerFlag : fx::Module {
    SymbolicInnerFlag() : fx::Module("SymbolicInnerFlag", {"x", "flag"}) {}
    Value forward(const std::vector<Value>& in) override {
      return fx::call("torch.unique", in[0], kw("return_inverse", true), kw("return_counts", in[1]));
    }
  } inner;
  EXPECT_THROW(fx::symbolic_trace(inner), fx::TraceError);
  // Arguments that do not bind: Python's TypeError, as a TraceError.
  struct Unbound : fx::Module {
    Unbound() : fx::Module("Unbound") {}
    Value forward(const std::vector<Value>& in) override {
      return fx::call("torch.nn.functional.softmax", in[0], kw("axis", 1));
    }
  } unbound;
  try {
    fx::symbolic_trace(unbound);
    FAIL() << "no error";
  } catch (const fx::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("torch.nn.functional.softmax(): TypeError: Got an unexpected keyword "
                                         "argument 'axis'"),
              std::string::npos)
        << e.what();
  }
}
TEST(Trace, AForwardReturnsADict) {
  expect_same_trace<DetectionHead>("detection_head");
  torch::manual_seed(0);
  DetectionHead m;
  auto gm = fx::symbolic_trace(m);
  const auto x = torch::randn({2, 4, 5, 5});
  Value got = gm->forward({x}), want = m.forward({x});
  ASSERT_TRUE(got.is_dict());
  EXPECT_EQ(got.keys(), (std::vector<std::string>{"logits", "scores", "boxes", "count"}));
  EXPECT_EQ(want.keys(), got.keys());
  for (const char* k : {"logits", "scores", "boxes"})
    EXPECT_TRUE(torch::allclose(got[k].tensor(), want[k].tensor())) << k;
  EXPECT_EQ(got["count"].to_int(), 2);
  EXPECT_THROW(want["nope"], fx::Error);
}

TEST(Trace, ContainersAreTracedThrough) { expect_same_trace<Sequence>("sequence"); }
TEST(Trace, SharedModulesAndParametersTakeTheirFirstPath) { expect_same_trace<Shared>("shared"); }
TEST(Trace, CustomLeafPolicy) {
  expect_same_trace<SimpleNet, LinearNotLeaf>("simple_net_linear_not_leaf");
  expect_same_trace<Sequence, LinearNotLeaf>("sequence_linear_not_leaf");
}

// The seed's BadModel: `if x.sum() > 0` depends on the data.
struct BadModel : fx::Module {
  BadModel() : fx::Module("BadModel") {}
  Value forward(const std::vector<Value>& in) override {
    if (in[0].sum() > 0) return in[0];
    return -in[0];
  }
};

TEST(Trace, DataDependentControlFlowIsATraceError) {
  BadModel m;
  try {
    fx::symbolic_trace_graph(m);
    FAIL() << "no TraceError";
  } catch (const fx::TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cannot be used as inputs to control flow"), std::string::npos) << msg;
    EXPECT_NE(msg.find("converting to bool"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'gt'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fx::wrap"), std::string::npos) << msg;
  }
  EXPECT_EQ(fx::Tracer::current(), nullptr);  // the failed trace left nothing behind
}

struct Loops : fx::Module {
  std::string mode;
  explicit Loops(std::string m) : fx::Module("Loops"), mode(std::move(m)) {}
  Value forward(const std::vector<Value>& in) override {
    if (mode == "int") return Value(in[0].size(0).to_int());
    if (mode == "float") return Value(in[0].sum().to_double());
    Value acc = 0;
    for (const Value& v : in[0].items()) acc = acc + v;
    return acc;
  }
};

TEST(Trace, SymbolicValuesHaveNoConcreteValue) {
  for (const char* mode : {"int", "float", "iterate"}) {
    Loops m(mode);
    EXPECT_THROW(fx::symbolic_trace_graph(m), fx::TraceError) << mode;
  }
}

// Static control flow on a hyperparameter is fine: each setting traces its own graph.
struct Static : fx::Module {
  bool do_activation;
  explicit Static(bool act) : fx::Module("Static"), do_activation(act) {}
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0] * 2;
    if (do_activation) x = x.relu();
    return x;
  }
};

TEST(Trace, StaticControlFlowSpecializes) {
  Static on(true), off(false);
  EXPECT_EQ(fx::symbolic_trace_graph(on)->size(), 4u);
  EXPECT_EQ(fx::symbolic_trace_graph(off)->size(), 3u);
}

TEST(Trace, ModulesOutsideTheRootAreRejected) {
  struct Stray : fx::Module {
    std::shared_ptr<Linear> stray = std::make_shared<Linear>(2, 2);  // never registered
    Stray() : fx::Module("Stray") {}
    Value forward(const std::vector<Value>& in) override { return (*stray)(in[0]); }
  } m;
  try {
    fx::symbolic_trace_graph(m);
    FAIL();
  } catch (const fx::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("register_module"), std::string::npos) << e.what();
  }
}

TEST(Trace, ASecondTraceReusesTheConstantsNames) {
  Constants m;
  const std::string first = fx::symbolic_trace_graph(m)->to_string();
  EXPECT_EQ(m.attributes().size(), 5u);  // _tensor_constant3, then 0, 2, 4, 5
  EXPECT_EQ(fx::symbolic_trace_graph(m)->to_string(), first);
  EXPECT_EQ(m.attributes().size(), 5u);
}

TEST(Trace, AModuleTracedUnderAnotherPathTakesThatPath) {
  // A module remembers the target it was last traced under; another root
  // that holds it at another path must not get the old one.
  auto shared = std::make_shared<Linear>(2, 2);
  struct Holder : fx::Module {
    std::shared_ptr<Linear> leaf;
    Holder(const std::string& name, std::shared_ptr<Linear> l) : fx::Module("Holder", {"x"}) {
      leaf = register_module(name, std::move(l));
    }
    Value forward(const std::vector<Value>& in) override { return (*leaf)(in[0]); }
  };
  Holder a("first", shared), b("second", shared);
  auto target_of_call = [](fx::Module& root) {
    auto graph = fx::symbolic_trace_graph(root);
    for (fx::Node* n : graph->nodes())
      if (n->op() == fx::Op::call_module) return n->target().str();
    return std::string();
  };
  EXPECT_EQ(target_of_call(a), "first");
  EXPECT_EQ(target_of_call(b), "second");
  EXPECT_EQ(target_of_call(a), "first");
}

TEST(Module, TensorAttributesByName) {
  Linear m(2, 2, /*bias=*/false);
  m.register_parameter("bias", at::Tensor(), /*requires_grad=*/false);  // torch.nn's bias = None
  const at::Tensor a = torch::ones({2}), b = torch::zeros({2});
  m.register_attribute("k", a);
  m.register_attribute("j", a);
  ASSERT_NE(m.attribute("k"), nullptr);
  EXPECT_TRUE(m.attribute("k")->is_same(a));
  EXPECT_EQ(m.attribute("nope"), nullptr);
  m.register_attribute("k", b);  // replaces, keeps its place
  EXPECT_TRUE(m.attribute("k")->is_same(b));
  ASSERT_EQ(m.attributes().size(), 2u);
  EXPECT_EQ(m.attributes()[0].first, "k");
  // As torch.nn refuses `self.weight = tensor` for a parameter (None included).
  EXPECT_THROW(m.register_attribute("weight", a), fx::Error);
  EXPECT_THROW(m.register_attribute("bias", a), fx::Error);
  EXPECT_THROW(m.register_attribute("a.b", a), fx::Error);
}

// forward's parameters bind as torch.fx binds a call (fast_bind), whose
// TypeError each message quotes.
TEST(Trace, ForwardArgumentsAreChecked) {
  Operations m;
  auto error = [&](std::vector<fx::Value> args, fx::ValueKwargs kwargs) {
    try {
      m.bind(std::move(args), std::move(kwargs));
    } catch (const fx::Error& e) {
      return std::string(e.what());
    }
    return std::string("<no fx::Error>");
  };
  auto has = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  EXPECT_PRED2(has, error({1, 2, 3, 4}, {}),
               "Operations.forward: TypeError: Too many positional arguments: expected max 3, got 4");
  EXPECT_PRED2(has, error({1}, {}), "Missing required argument 'y'");
  EXPECT_PRED2(has, error({1, 2}, {{"x", 3}}), "Multiple values for argument 'x'");
  EXPECT_PRED2(has, error({1, 2}, {{"nope", 3}}), "Got an unexpected keyword argument 'nope'");
  EXPECT_EQ(m.bind({1}, {{"y", 3}}).size(), 3u);  // scale defaulted
}

// A tracer whose trace has finished records nothing: a node made through it
// is a TraceError (it dereferenced the graph it had handed over).
TEST(Trace, AFinishedTracerRefusesToRecord) {
  Operations m;
  fx::Tracer tracer;
  auto graph = tracer.trace(m);
  ASSERT_NE(graph, nullptr);
  EXPECT_THROW(tracer.create_node(fx::Op::call_function, fx::Target("torch.relu"), {}, {}), fx::TraceError);
  EXPECT_THROW(tracer.create_proxy(fx::Op::call_function, fx::Target("torch.relu"), {}, {}), fx::TraceError);
  EXPECT_THROW(tracer.graph(), fx::TraceError);
  fx::Tracer fresh;
  EXPECT_THROW(fresh.graph(), fx::TraceError);
}

// Through a Tracer&, a GraphAppendingTracer's graph is the one it appends to
// (Tracer::graph read its own, empty, graph pointer).
TEST(Trace, AGraphAppendingTracerAnswersWithItsGraph) {
  fx::Graph g;
  fx::GraphAppendingTracer appending(g);
  fx::Tracer& tracer = appending;
  EXPECT_EQ(&tracer.graph(), &g);
}

}  // namespace

namespace {

// The same model code runs eagerly on concrete values.
TEST(Eager, ModelsRunOnLibTorch) {
  torch::manual_seed(0);
  MyModel m;
  at::Tensor x = torch::randn({2, 3, 4});
  at::Tensor got = m(x).tensor();
  at::Tensor want =
      torch::nn::functional::linear(x + m.param, m.linear->weight, m.linear->bias).clamp(0.0, 1.0);
  EXPECT_TRUE(torch::allclose(got, want));

  BasicBlock block;
  block.eval();
  at::Tensor img = torch::randn({2, 4, 8, 8});
  auto bn = [](const at::Tensor& t, const BatchNorm2d& b) {
    return torch::batch_norm(t, b.weight, b.bias, b.running_mean, b.running_var, false, 0.1, 1e-05, false);
  };
  at::Tensor out = bn(torch::conv2d(img, block.conv1->weight, {}, 2, 1), *block.bn1).relu();
  out = bn(torch::conv2d(out, block.conv2->weight, {}, 1, 1), *block.bn2);
  auto& down_conv = dynamic_cast<Conv2d&>((*block.downsample)[0]);
  auto& down_bn = dynamic_cast<BatchNorm2d&>((*block.downsample)[1]);
  out = (out + bn(torch::conv2d(img, down_conv.weight, {}, 2), down_bn)).relu();
  EXPECT_TRUE(torch::allclose(block(img).tensor(), out, 1e-5, 1e-6));
}

TEST(Eager, OperationsOnConcreteValues) {
  Operations m;
  at::Tensor x = torch::rand({4, 6}), y = torch::rand({3, 3});
  auto out = m(x, y).items();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[2].ivalue().toInt(), 6);  // x.shape[1], a Python int
  EXPECT_TRUE(torch::allclose(out[3].tensor(), torch::matmul(torch::matmul(y, y.t()), y)));
  at::Tensor z = -(1 / ((2 - x.view({4, -1}) * 2.0) + 1e-05));
  EXPECT_TRUE(torch::allclose(out[4].tensor(), torch::gelu(z, "tanh")));
}

TEST(Eager, ConcreteControlFlowWorks) {
  BadModel m;
  at::Tensor pos = torch::ones({3}), neg = -torch::ones({3});
  EXPECT_TRUE(torch::equal(m(pos).tensor(), pos));
  EXPECT_TRUE(torch::equal(m(neg).tensor(), -neg));
}

}  // namespace

namespace {

template <class M>
void expect_same_module_text(const std::string& name) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  M model;
  auto gm = fx::symbolic_trace(model);
  EXPECT_EQ(gm->code(), expected().at(name).at("code").get<std::string>());
  EXPECT_EQ(gm->to_string(), expected().at(name).at("str").get<std::string>());
}

TEST(GraphModule, PrintsLikeTorchFx) {
  expect_same_module_text<MyModel>("my_model");
  expect_same_module_text<BasicBlock>("basic_block");
  expect_same_module_text<Sequence>("sequence");
  expect_same_module_text<Attributes>("attributes");
}

TEST(GraphModule, CopiesExactlyWhatTheGraphUses) {
  Sequence model;
  LinearNotLeaf tracer;
  fx::GraphModule gm(model, tracer.trace(model), "Sequence");
  std::vector<std::string> params;
  for (const auto& p : gm.named_parameters()) params.push_back(p.key());
  EXPECT_EQ(params, (std::vector<std::string>{"features.0.weight", "features.0.bias"}));
  // The parameters are shared with the root, not copied.
  auto& lin = dynamic_cast<Linear&>((*model.features)[0]);
  EXPECT_TRUE(gm.get_tensor("features.0.weight").is_same(lin.weight));
  EXPECT_TRUE(gm.has_submodule("features.2.1"));
  EXPECT_FALSE(gm.has_submodule("features.9"));
  EXPECT_TRUE(gm.has_attribute("features.0.bias"));
}

// `seq.0` first makes an empty container `seq`; the call of `seq` itself
// then puts the root's Sequential there (FX's setattr), and every target
// resolves in the final tree.
TEST(GraphModule, AModuleCalledWholeReplacesTheContainerOfItsChild) {
  struct Outer : fx::Module {
    std::shared_ptr<fx::nn::Sequential> seq;
    Outer() : fx::Module("Outer") {
      seq = register_module("seq", make<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                       make<Linear>(4, 4), make<fx::nn::ReLU>()}));
    }
    Value forward(const std::vector<Value>& in) override { return (*seq)(in[0]); }
  };
  torch::manual_seed(0);
  Outer root;
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* first = g->call_module("seq.0", {x});
  g->output(g->call_module("seq", {first}));
  fx::GraphModule gm(root, std::move(g), "Outer");
  EXPECT_EQ(gm.get_submodule("seq"), root.seq.get());
  EXPECT_EQ(gm.get_submodule("seq.0"), &(*root.seq)[0]);
  at::Tensor in = torch::randn({2, 4});
  EXPECT_TRUE(torch::allclose(gm(in).tensor(), root(root.seq->operator[](0)(in)).tensor()));
  gm.recompile();
  EXPECT_TRUE(torch::allclose(gm(in).tensor(), root(root.seq->operator[](0)(in)).tensor()));
}

TEST(GraphModule, RunsLikeTheEagerModel) {
  torch::manual_seed(0);
  MyModel m;
  auto gm = fx::symbolic_trace(m);
  at::Tensor x = torch::randn({2, 3, 4});
  EXPECT_TRUE(torch::allclose((*gm)(x).tensor(), m(x).tensor()));
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), m(x).tensor()));

  BasicBlock block;
  block.eval();
  auto gb = fx::symbolic_trace(block);
  at::Tensor img = torch::randn({2, 4, 8, 8});
  EXPECT_TRUE(torch::allclose((*gb)(img).tensor(), block(img).tensor()));

  Operations ops;
  auto go = fx::symbolic_trace(ops);
  at::Tensor a = torch::rand({4, 6}), b = torch::rand({3, 3});
  auto want = ops(a, b, 3.0).items();
  auto got = (*go)(a, b, kw("scale", 3.0)).items();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got[2].ivalue().toInt(), 6);
  for (size_t i : {0u, 1u, 3u, 4u}) EXPECT_TRUE(torch::allclose(got[i].tensor(), want[i].tensor())) << i;
}

// The tutorial's transformation: relu -> gelu, recompile, run.
TEST(GraphModule, EditRecompileRun) {
  torch::manual_seed(0);
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  for (fx::Node* n : gm->graph().nodes())
    if (n->op() == fx::Op::call_function && n->target() == "torch.relu")
      n->set_target("torch.nn.functional.gelu");
  gm->recompile();
  EXPECT_EQ(gm->code(),
            "\n\n\ndef forward(self, x):\n    linear1 = self.linear1(x);  x = None\n"
            "    relu = torch.nn.functional.gelu(linear1);  linear1 = None\n"
            "    linear2 = self.linear2(relu);  relu = None\n"
            "    relu_1 = torch.nn.functional.gelu(linear2);  linear2 = None\n    return relu_1\n    ");
  at::Tensor x = torch::randn({5, 10});
  at::Tensor y = (*gm)(x).tensor();
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 10}));
  at::Tensor h = torch::gelu(torch::nn::functional::linear(x, net.linear1->weight, net.linear1->bias));
  EXPECT_TRUE(torch::allclose(
      y, torch::gelu(torch::nn::functional::linear(h, net.linear2->weight, net.linear2->bias))));
}

TEST(GraphModule, RetracingGivesTheSameGraph) {
  for (int which = 0; which < 3; ++which) {
    std::unique_ptr<fx::Module> m;
    if (which == 0) m = std::make_unique<MyModel>();
    if (which == 1) m = std::make_unique<Attributes>();
    if (which == 2) m = std::make_unique<Operations>();
    auto gm = fx::symbolic_trace(*m);
    auto again = fx::symbolic_trace(*gm);
    EXPECT_EQ(again->graph().to_string(), gm->graph().to_string()) << which;
  }
}

struct CountingInterpreter : fx::Interpreter {
  using fx::Interpreter::Interpreter;
  std::vector<std::string> seen;
  Value call_function(fx::Target t, const std::vector<Value>& a, const fx::ValueKwargs& k) override {
    seen.push_back(t.str());
    return fx::Interpreter::call_function(t, a, k);
  }
};

TEST(Interpreter, OverridesSeeEveryCall) {
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  CountingInterpreter interp(*gm);
  at::Tensor x = torch::randn({2, 10});
  Value y = interp.run({x});
  EXPECT_EQ(interp.seen, (std::vector<std::string>{"torch.relu", "torch.relu"}));
  EXPECT_TRUE(torch::allclose(y.tensor(), (*gm)(x).tensor()));
  EXPECT_TRUE(interp.env.empty() || interp.env.size() <= 2);  // dead values were dropped
}

TEST(GraphModule, UnknownTargetsFailAtRecompileNamingTheNode) {
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  gm->graph().find_nodes(fx::Op::call_function, "torch.relu")[0]->set_target("torch.frobnicate");
  try {
    gm->recompile();
    FAIL();
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'relu'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("torch.frobnicate"), std::string::npos) << msg;
  }
}

TEST(GraphModule, RuntimeErrorsNameTheNode) {
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  try {
    (*gm)(torch::randn({2, 7}));  // wrong feature size
    FAIL();
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'linear1'"), std::string::npos) << msg;
  }
  EXPECT_THROW(gm->run({}), fx::Error);  // missing input
}

}  // namespace

namespace {

// torch.fx.wrap('scaled_sum'): one node, run as a function.
const fx::Wrapped scaled_sum =
    fx::wrap("models.scaled_sum",
             [](const std::vector<Value>& a, const fx::ValueKwargs&) { return (a.at(0) + a.at(1)) * 2; });

struct WrappedModel : fx::Module {
  std::shared_ptr<Linear> linear;
  WrappedModel() : fx::Module("Wrapped") { linear = register_module("linear", make<Linear>(4, 4)); }
  Value forward(const std::vector<Value>& in) override { return scaled_sum((*linear)(in[0]), in[0]).relu(); }
};

TEST(Wrap, RecordsOneNodeAndRuns) {
  expect_same_trace<WrappedModel>("wrapped");
  WrappedModel m;
  auto gm = fx::symbolic_trace(m);
  const fx::Node* n = gm->graph().find_nodes(fx::Op::call_function, "models.scaled_sum").at(0);
  ASSERT_NE(n->meta().get<bool>("is_wrapped"), nullptr);
  at::Tensor x = torch::randn({2, 4});
  at::Tensor want = ((torch::nn::functional::linear(x, m.linear->weight, m.linear->bias) + x) * 2).relu();
  EXPECT_TRUE(torch::allclose(m(x).tensor(), want));      // eager: the function runs
  EXPECT_TRUE(torch::allclose((*gm)(x).tensor(), want));  // the GraphModule runs it through the runtime
  EXPECT_THROW(fx::wrap("", [](const std::vector<Value>&, const fx::ValueKwargs&) { return Value(); }),
               fx::Error);
}

}  // namespace
