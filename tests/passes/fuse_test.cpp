// fx::passes::fuse and remove_dropout against torch.fx 2.14's
// torch.fx.experimental.optimization (fuse_oracle.py: the same small models
// in Python, and torchvision's resnet18 / mobilenet_v2 for fxcpp::models'),
// with outputs allclose to the unfused model's.
#include <fx/fx.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/passes/fuse.h>
#include <fx/passes/remove_dropout.h>

#include "simplify_test_util.h"

namespace {

using fx::Value;
using simplify_test::oracle;
namespace nn = fx::nn;

template <class M, class... A>
std::shared_ptr<M> make(A&&... a) {
  return std::make_shared<M>(std::forward<A>(a)...);
}

struct ConvBn : fx::Module {
  std::shared_ptr<nn::Conv1d> c1;
  std::shared_ptr<nn::BatchNorm1d> b1;
  std::shared_ptr<nn::Conv2d> c2, shared, untracked, mixed;
  std::shared_ptr<nn::BatchNorm2d> b2, shared_bn, untracked_bn;
  std::shared_ptr<nn::Conv3d> c3;
  std::shared_ptr<nn::BatchNorm3d> b3;
  ConvBn() : fx::Module("ConvBn", {"x1", "x2", "x3"}) {
    c1 = register_module("c1", make<nn::Conv1d>(3, 4, std::vector<int64_t>{3}));
    b1 = register_module("b1", make<nn::BatchNorm1d>(4));
    c2 = register_module("c2", make<nn::Conv2d>(3, 4, std::vector<int64_t>{3}, std::vector<int64_t>{1},
                                                std::vector<int64_t>{0}, std::vector<int64_t>{1}, 1, false));
    b2 = register_module("b2", make<nn::BatchNorm2d>(4));
    c3 = register_module("c3", make<nn::Conv3d>(3, 4, std::vector<int64_t>{3}));
    b3 = register_module("b3", make<nn::BatchNorm3d>(4));
    shared = register_module("shared", make<nn::Conv2d>(3, 4, std::vector<int64_t>{3}));
    shared_bn = register_module("shared_bn", make<nn::BatchNorm2d>(4));
    untracked = register_module("untracked", make<nn::Conv2d>(3, 4, std::vector<int64_t>{3}));
    untracked_bn = register_module("untracked_bn", make<nn::BatchNorm2d>(4, 1e-5, 0.1, true, false));
    mixed = register_module("mixed", make<nn::Conv2d>(3, 4, std::vector<int64_t>{3}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value a = (*b1)((*c1)(in[0]));
    Value b = (*b2)((*c2)(in[1]));
    Value c = (*b3)((*c3)(in[2]));
    Value s = (*shared)(in[1]);
    Value d = (*shared_bn)(s) + s;
    Value e = (*untracked_bn)((*untracked)(in[1]));
    Value f = fx::call("torch.relu", (*mixed)(in[1]));
    return Value::tuple({a, b, c, d, e, f});
  }
};

struct LinearBn : fx::Module {
  std::shared_ptr<nn::Linear> lin, lin2;
  std::shared_ptr<nn::BatchNorm1d> bn, bn2;
  LinearBn() : fx::Module("LinearBn") {
    lin = register_module("lin", make<nn::Linear>(5, 6));
    bn = register_module("bn", make<nn::BatchNorm1d>(6));
    lin2 = register_module("lin2", make<nn::Linear>(6, 3, false));
    bn2 = register_module("bn2", make<nn::BatchNorm1d>(3, 1e-5, 0.1, false));
  }
  Value forward(const std::vector<Value>& in) override {
    return (*bn2)((*lin2)(fx::call("torch.relu", (*bn)((*lin)(in[0])))));
  }
};

struct Drops : fx::Module {
  std::shared_ptr<nn::Linear> lin;
  std::shared_ptr<nn::Dropout> drop, drop_1;
  std::shared_ptr<nn::Dropout2d> drop2d;
  Drops() : fx::Module("Drops") {
    lin = register_module("lin", make<nn::Linear>(4, 4));
    drop = register_module("drop", make<nn::Dropout>(0.2));
    drop2d = register_module("drop2d", make<nn::Dropout2d>(0.2));
    drop_1 = register_module("drop_1", make<nn::Dropout>(0.3));
  }
  Value forward(const std::vector<Value>& in) override {
    Value y = (*drop)((*lin)(in[0]));
    Value z = (*drop2d)(y.unsqueeze(0));
    // One statement each: C++ leaves the order of operands unspecified.
    Value a = (*drop_1)(y);
    Value b = fx::call("torch.relu", (*drop)(y));
    Value sum = a + b;
    Value c = z.squeeze(0);
    return sum + c;
  }
};

// Running statistics and affine parameters away from their initial values,
// so that folding them is visible in the outputs.
void randomize_batchnorms(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (const auto& child : m.modules(/*include_self=*/false)) {
    auto* bn = dynamic_cast<nn::NormBase*>(child.get());
    if (!bn || !bn->track_running_stats) continue;
    bn->running_mean.uniform_(-0.5, 0.5);
    bn->running_var.uniform_(0.5, 2.0);
    if (bn->weight.defined()) bn->weight.uniform_(0.5, 1.5);
    if (bn->bias.defined()) bn->bias.uniform_(-0.5, 0.5);
  }
}

void expect_fx_text(const fx::GraphModule& gm, const std::string& name) {
  EXPECT_EQ(gm.graph().to_string(), oracle(name, "graph")) << name;
  EXPECT_EQ(gm.code(), oracle(name, "code")) << name;
  gm.graph().lint();
}

TEST(Fuse, ConvBnAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  ConvBn model;
  randomize_batchnorms(model);
  model.eval();
  std::vector<c10::IValue> in = {torch::rand({2, 3, 8}), torch::rand({2, 3, 8, 8}),
                                 torch::rand({2, 3, 5, 5, 5})};
  auto traced = fx::symbolic_trace(model);
  c10::IValue before = traced->run(in);

  auto fused = fx::passes::fuse(model);
  expect_fx_text(*fused, "ConvBn");
  simplify_test::expect_allclose(before, fused->run(in), 1e-4, 1e-5);
  // The model is untouched: its own modules still compute the unfused result.
  simplify_test::expect_allclose(before, fx::symbolic_trace(model)->run(in));
  // The conv without bias got one; the module is a new Conv2d.
  auto* c2 = dynamic_cast<nn::Conv2d*>(fused->get_submodule("c2"));
  ASSERT_NE(c2, nullptr);
  EXPECT_NE(c2, model.c2.get());
  EXPECT_TRUE(c2->bias.defined());
  EXPECT_EQ(c2->named_parameters(false).size(), 2u);

  // In place on the traced module: the same graph.
  EXPECT_TRUE(fx::passes::fuse(*traced));
  EXPECT_EQ(traced->graph().to_string(), oracle("ConvBn", "graph"));
  simplify_test::expect_allclose(before, traced->run(in), 1e-4, 1e-5);
  EXPECT_FALSE(fx::passes::fuse(*traced));
}

TEST(Fuse, LinearBn) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  LinearBn model;
  randomize_batchnorms(model);
  model.eval();
  at::Tensor x = torch::rand({4, 5});
  c10::IValue before = fx::symbolic_trace(model)->run({x});
  auto fused = fx::passes::fuse(model);
  expect_fx_text(*fused, "LinearBn");
  simplify_test::expect_allclose(before, fused->run({x}), 1e-4, 1e-5);
}

TEST(Fuse, RefusesTrainingMode) {
  ConvBn model;
  model.train();
  try {
    fx::passes::fuse(model);
    ADD_FAILURE() << "expected fx::Error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'c1'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("eval()"), std::string::npos) << msg;
  }
}

template <class Model>
void check_corpus(const std::string& name, std::shared_ptr<Model> model) {
  SKIP_WITHOUT_ORACLE();
  randomize_batchnorms(*model);
  model->eval();
  auto traced = fx::symbolic_trace(*model);
  ASSERT_EQ(traced->graph().to_string(), oracle(name, "before"));
  at::Tensor x = torch::rand({1, 3, 64, 64});
  c10::IValue before = traced->run({x});
  auto fused = fx::passes::fuse(*model);
  expect_fx_text(*fused, name);
  simplify_test::expect_allclose(before, fused->run({x}), 1e-4, 1e-4);
}

TEST(Fuse, Resnet18AsTorchFx) {
  torch::manual_seed(0);
  check_corpus("resnet18", fx::models::resnet18());
}

TEST(Fuse, MobilenetV2AsTorchFx) {
  torch::manual_seed(0);
  check_corpus("mobilenet_v2", fx::models::mobilenet_v2());
}

TEST(RemoveDropout, AsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  Drops model;
  model.eval();
  at::Tensor x = torch::rand({3, 4});
  auto traced = fx::symbolic_trace(model);
  c10::IValue before = traced->run({x});
  auto removed = fx::passes::remove_dropout(model);
  expect_fx_text(*removed, "Drops");
  simplify_test::expect_allclose(before, removed->run({x}));
  // In place: the same graph here (the nodes keep their names).
  EXPECT_TRUE(fx::passes::remove_dropout(*traced));
  EXPECT_EQ(traced->graph().to_string(), oracle("Drops", "graph"));
  EXPECT_FALSE(fx::passes::remove_dropout(*traced));
}

TEST(RemoveDropout, MobilenetV2AsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  torch::manual_seed(0);
  auto model = fx::models::mobilenet_v2();
  model->eval();
  auto removed = fx::passes::remove_dropout(*model);
  expect_fx_text(*removed, "mobilenet_v2_no_dropout");
  at::Tensor x = torch::rand({1, 3, 64, 64});
  simplify_test::expect_allclose(fx::symbolic_trace(*model)->run({x}), removed->run({x}), 1e-4, 1e-5);
}

TEST(RemoveDropout, RefusesWrongArity) {
  Drops model;
  auto gm = fx::symbolic_trace(model);
  fx::Node* drop = gm->graph().find_nodes(fx::Op::call_module, "drop").front();
  drop->set_args({drop->args()[0], 0.5});
  try {
    fx::passes::remove_dropout(*gm);
    ADD_FAILURE() << "expected fx::Error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'drop'"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// A BatchNorm whose size does not match the Linear before it: an fx::Error
// naming both nodes, not a LibTorch error.
TEST(Fuse, RefusesMismatchedSizes) {
  struct Bad : fx::Module {
    std::shared_ptr<nn::Linear> lin;
    std::shared_ptr<nn::BatchNorm1d> bn;
    Bad() : fx::Module("Bad") {
      lin = register_module("lin", make<nn::Linear>(3, 4));
      bn = register_module("bn", make<nn::BatchNorm1d>(5));
    }
    Value forward(const std::vector<Value>& in) override { return (*bn)((*lin)(in[0])); }
  } model;
  model.eval();
  try {
    fx::passes::fuse(model);
    ADD_FAILURE() << "expected fx::Error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'bn'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'lin'"), std::string::npos) << msg;
  }
}

}  // namespace
