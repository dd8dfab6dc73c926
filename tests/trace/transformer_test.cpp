// fx::Transformer, compared with what torch.fx.Transformer makes of the
// Python originals in models.py (TRANSFORMS; expected texts from oracle.py).
#include "models.h"

#include <fx/fx.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace {

using namespace fxcpp_test;
using fx::kw;
using fx::Value;
using fx::ValueKwargs;
using fx::nn::Linear;

void expect_torch_fx_text(const fx::GraphModule& gm, const std::string& name) {
  ASSERT_TRUE(expected().contains(name)) << name;
  EXPECT_EQ(gm.graph().to_string(), expected().at(name).at("graph").get<std::string>()) << name;
  EXPECT_EQ(gm.code(), expected().at(name).at("code").get<std::string>()) << name;
  EXPECT_EQ(gm.to_string(), expected().at(name).at("str").get<std::string>()) << name;
}

#define SKIP_WITHOUT_ORACLE() \
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run (" << FXCPP_TRACE_EXPECTED << ")"

struct NegSigmoid : fx::Module {
  NegSigmoid() : fx::Module("NegSigmoid") {}
  Value forward(const std::vector<Value>& in) override { return fx::call("torch.sigmoid", in[0]).neg(); }
};

struct Mixed : fx::Module {
  std::shared_ptr<Linear> linear;
  at::Tensor w, scale, offset;
  std::shared_ptr<fx::nn::Sequential> seq;
  Mixed() : fx::Module("Mixed", {"x", {"k", 2.0}}) {
    linear = register_module("linear", make<Linear>(4, 4));
    w = register_parameter("w", torch::rand({4}));
    scale = register_buffer("scale", torch::ones({4}));
    offset = register_attribute("offset", torch::zeros({4}));
    seq = register_module("seq", make<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                     make<Linear>(4, 4), make<fx::nn::ReLU>()}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value y = (*linear)(in[0]) * w + scale;
    y = (*seq)(y)-scale + offset;
    Value z = fx::call("torch.matmul", y, linear->weight);
    return Value::tuple({z * in[1], y.sum(kw("dim", -1))});
  }
};

// The FX tutorial's relu -> gelu, as a Transformer.
struct ReluToGelu : fx::Transformer {
  using fx::Transformer::Transformer;
  Value call_function(fx::Target t, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (t == "torch.relu") return fx::call("torch.nn.functional.gelu", args[0]);
    return fx::Transformer::call_function(t, args, kwargs);
  }
};

// torch.fx.Transformer's docstring example: swap torch.sigmoid and Tensor.neg.
struct NegSigmoidSwap : fx::Transformer {
  using fx::Transformer::Transformer;
  Value call_function(fx::Target t, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (t == "torch.sigmoid") return fx::call("torch.neg", args[0]);
    return fx::Transformer::call_function(t, args, kwargs);
  }
  Value call_method(fx::Target t, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (t == "neg") return args[0].call_method("sigmoid");
    return fx::Transformer::call_method(t, args, kwargs);
  }
};

TEST(Transformer, RewritesTargetsLikeTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  std::unique_ptr<fx::GraphModule> gelu = ReluToGelu(*gm).transform();
  expect_torch_fx_text(*gelu, "xform_relu_to_gelu");
  at::Tensor x = torch::randn({5, 10});
  at::Tensor h = torch::gelu(torch::nn::functional::linear(x, net.linear1->weight, net.linear1->bias));
  at::Tensor want = torch::gelu(torch::nn::functional::linear(h, net.linear2->weight, net.linear2->bias));
  EXPECT_TRUE(torch::allclose((*gelu)(x).tensor(), want));
  // The original is untouched: still relu.
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_function, "torch.relu").size(), 2u);
  EXPECT_TRUE(torch::allclose((*gm)(x).tensor(), net(x).tensor()));

  NegSigmoid ns;
  auto gns = fx::symbolic_trace(ns);
  auto swapped = NegSigmoidSwap(*gns).transform();
  expect_torch_fx_text(*swapped, "xform_neg_sigmoid_swap");
  EXPECT_TRUE(torch::allclose((*swapped)(x).tensor(), torch::sigmoid(-x)));
}

TEST(Transformer, IdentityKeepsModulesParametersBuffersAndConstants) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  Mixed mixed;
  auto gm = fx::symbolic_trace(mixed);
  auto same = fx::Transformer(*gm).transform();
  expect_torch_fx_text(*same, "xform_identity_mixed");
  at::Tensor x = torch::randn({3, 4});
  auto want = (*gm)(x, 3.0).items();
  auto got = (*same)(x, 3.0).items();
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(torch::allclose(got[i].tensor(), want[i].tensor())) << i;
  EXPECT_TRUE(torch::allclose((*same)(x).items()[0].tensor(), mixed(x).items()[0].tensor()));  // k's default
  // Shared with the module transformed, as torch.fx's GraphModule(self.module, ...) shares.
  EXPECT_TRUE(same->get_tensor("w").is_same(mixed.w));
  EXPECT_TRUE(same->get_tensor("linear.weight").is_same(mixed.linear->weight));
  EXPECT_EQ(same->get_submodule("seq.0"), gm->get_submodule("seq.0"));

  Attributes attrs;
  auto ga = fx::symbolic_trace(attrs);
  auto sa = fx::Transformer(*ga).transform();
  expect_torch_fx_text(*sa, "xform_identity_attributes");
  at::Tensor v = torch::randn({2, 3});
  EXPECT_TRUE(torch::allclose((*sa)(v).tensor(), attrs(v).tensor()));
}

TEST(Transformer, IdentityOnResNetBlock) {
  SKIP_WITHOUT_ORACLE();
  BasicBlock block;
  block.eval();
  auto gm = fx::symbolic_trace(block);
  auto same = fx::Transformer(*gm).transform();
  expect_torch_fx_text(*same, "xform_identity_basic_block");
  EXPECT_FALSE(same->is_training());  // as torch.fx's GraphModule takes root.training
  at::Tensor img = torch::randn({2, 4, 8, 8});
  EXPECT_TRUE(torch::allclose((*same)(img).tensor(), block(img).tensor(), 1e-5, 1e-6));
}

// An override may record several nodes, and new tensors become constants of the new module.
struct ReluToScaledSigmoid : fx::Transformer {
  using fx::Transformer::Transformer;
  at::Tensor gain = torch::full({20}, 0.5);
  Value call_function(fx::Target t, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (t == "torch.relu") return args[0] * fx::call("torch.sigmoid", args[0]) * gain;
    return fx::Transformer::call_function(t, args, kwargs);
  }
};

TEST(Transformer, OverridesRecordSeveralNodesAndConstants) {
  torch::manual_seed(0);
  struct One : fx::Module {
    std::shared_ptr<Linear> fc;
    One() : fx::Module("One") { fc = register_module("fc", make<Linear>(10, 20)); }
    Value forward(const std::vector<Value>& in) override { return fx::call("torch.relu", (*fc)(in[0])); }
  } one;
  auto gm = fx::symbolic_trace(one);
  ReluToScaledSigmoid xf(*gm);
  auto out = xf.transform();
  EXPECT_EQ(out->code(),
            "\n\n\ndef forward(self, x):\n    fc = self.fc(x);  x = None\n"
            "    sigmoid = torch.sigmoid(fc)\n    mul = fc * sigmoid;  fc = sigmoid = None\n"
            "    _tensor_constant0 = self._tensor_constant0\n"
            "    mul_1 = mul * _tensor_constant0;  mul = _tensor_constant0 = None\n    return mul_1\n    ");
  EXPECT_TRUE(out->get_tensor("_tensor_constant0").is_same(xf.gain));
  at::Tensor x = torch::randn({3, 10});
  at::Tensor h = torch::nn::functional::linear(x, one.fc->weight, one.fc->bias);
  EXPECT_TRUE(torch::allclose((*out)(x).tensor(), h * torch::sigmoid(h) * 0.5));
  EXPECT_FALSE(gm->has_attribute("_tensor_constant0"));  // the original did not grow one
}

TEST(Transformer, CallModuleFollowsTheTracersLeafPolicy) {
  torch::manual_seed(0);
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  auto inlined = fx::Transformer(*gm, std::make_unique<LinearNotLeaf>()).transform();
  EXPECT_TRUE(inlined->graph().find_nodes(fx::Op::call_module, "linear1").empty());
  EXPECT_EQ(inlined->graph().find_nodes(fx::Op::get_attr, "linear1.weight").size(), 1u);
  EXPECT_TRUE(inlined->get_tensor("linear2.bias").is_same(net.linear2->bias));
  at::Tensor x = torch::randn({4, 10});
  EXPECT_TRUE(torch::allclose((*inlined)(x).tensor(), net(x).tensor()));
}

TEST(Transformer, TransformingATransformedModuleAndRetracing) {
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  auto once = fx::Transformer(*gm).transform();
  auto twice = fx::Transformer(*once).transform();
  EXPECT_EQ(twice->code(), gm->code());
  EXPECT_EQ(fx::symbolic_trace(*twice)->graph().to_string(), gm->graph().to_string());
}

// A graph traced with structured concrete_args takes the leaves; its module the structure.
struct PairedNoFlag : fx::Module {
  PairedNoFlag() : fx::Module("Paired", {"x", "pair"}) {}
  Value forward(const std::vector<Value>& in) override {
    return Value::tuple({in[0] + in[1][0], Value::list({in[0] * in[1][1], in[0]})});
  }
};

TEST(Transformer, KeepsTheStructureOfConcreteArgs) {
  PairedNoFlag m;
  auto gm = fx::symbolic_trace(m, {{"pair", fx::ConcreteArg::list({fx::PH, fx::PH})}});
  ASSERT_TRUE(gm->graph().pytree_info().has_value());
  for (const auto& out : {fx::Transformer(*gm).transform(), gm->deepcopy()}) {
    EXPECT_EQ(out->code(), gm->code());
    at::Tensor x = torch::randn({3}), a = torch::randn({3}), b = torch::randn({3});
    Value got = (*out)(x, Value::list({a, b}));
    ASSERT_TRUE(got.is_tuple());
    EXPECT_TRUE(torch::equal(got.items()[0].tensor(), x + a));
    EXPECT_TRUE(torch::equal(got.items()[1].items()[0].tensor(), x * b));
  }
}

struct Failing : fx::Transformer {
  using fx::Transformer::Transformer;
  Value call_method(fx::Target t, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (t == "neg") throw fx::Error("no neg here");
    return fx::Transformer::call_method(t, args, kwargs);
  }
};

TEST(Transformer, ErrorsNameTheNode) {
  NegSigmoid ns;
  auto gm = fx::symbolic_trace(ns);
  Failing xf(*gm);
  try {
    xf.transform();
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no neg here"), std::string::npos) << msg;
    EXPECT_NE(msg.find("While executing %neg"), std::string::npos) << msg;
  }
  EXPECT_EQ(fx::Tracer::current(), nullptr);
  EXPECT_THROW(xf.new_graph(), fx::Error);  // only while transforming
  // The transformer is reusable after a failure.
  auto ok = fx::Transformer(*gm).transform();
  EXPECT_EQ(ok->code(), gm->code());
}

// models.py: DropBatchNorms.
TEST(GraphModule, DeleteAllUnusedSubmodulesAfterErasingCalls) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  BasicBlock m;
  auto gm = fx::symbolic_trace(m);
  for (fx::Node* n : gm->graph().nodes().to_vector()) {
    if (n->op() != fx::Op::call_module) continue;
    if (n->target().str() != "bn2" && n->target().str() != "downsample.1") continue;
    n->replace_all_uses_with(n->args().at(0).node());
    gm->graph().erase_node(n);
  }
  gm->delete_all_unused_submodules();
  gm->recompile();
  expect_torch_fx_text(*gm, "delete_all_unused_submodules");
  EXPECT_EQ(gm->get_submodule("bn2"), nullptr);
  EXPECT_EQ(gm->get_submodule("downsample.1"), nullptr);
  EXPECT_NE(gm->get_submodule("downsample.0"), nullptr);
  EXPECT_FALSE(gm->delete_submodule("bn2"));                  // gone already
  EXPECT_FALSE(gm->delete_submodule("downsample.0.weight"));  // a parameter, not a module
  auto x = torch::randn({1, 4, 8, 8});
  EXPECT_EQ(gm->run({x}).toTensor().sizes(), (std::vector<int64_t>{1, 8, 4, 4}));
}

}  // namespace
