// The torchvision ports of fxcpp::models against torchvision 0.29 itself
// (oracle.py writes torch.fx's texts, the Python model's state dict, an input
// and PyTorch's output). For each model:
//  - fx::symbolic_trace of the port prints the graph, the code and
//    str(GraphModule) that torch.fx 2.14 prints for the Python model;
//  - with the Python model's state dict loaded, in eval mode, the port's eager
//    output is allclose to PyTorch's (rtol 1e-4, atol 1e-5);
//  - the GraphModule's output equals the eager port's, exactly.
#include <fx/fx.h>
#include <fx/graph_module.h>
#include <fx/models/alexnet.h>
#include <fx/models/densenet.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/shufflenetv2.h>
#include <fx/models/squeezenet.h>
#include <fx/models/vgg.h>
#include <fx/models/vision_transformer.h>
#include <fx/nn/pooling.h>
#include <fx/state_dict.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

namespace {

const std::string kOracleDir = FXCPP_MODELS_ORACLE_DIR;

nlohmann::json& expected() {
  static nlohmann::json j = [] {
    std::ifstream in(kOracleDir + "/expected.json");
    if (!in) return nlohmann::json();
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The pooling modules in configurations the ports do not use (oracle.py's Pooling).
struct Pooling : fx::Module {
  std::shared_ptr<fx::nn::MaxPool1d> max1;
  std::shared_ptr<fx::nn::MaxPool2d> max2;
  std::shared_ptr<fx::nn::AvgPool2d> avg;
  std::shared_ptr<fx::nn::AdaptiveAvgPool1d> adaptive1;
  std::shared_ptr<fx::nn::AdaptiveAvgPool2d> adaptive2;
  Pooling() : fx::Module("Pooling") {
    max1 =
        register_module("max1", std::make_shared<fx::nn::MaxPool1d>(3, 2, 1, 1, false, /*ceil_mode=*/true));
    max2 = register_module("max2",
                           std::make_shared<fx::nn::MaxPool2d>(fx::nn::PoolArg{3, 2}, fx::nn::PoolArg{2, 1},
                                                               fx::nn::PoolArg{1, 0}, fx::nn::PoolArg{1, 2}));
    avg = register_module("avg",
                          std::make_shared<fx::nn::AvgPool2d>(3, 2, 1, false, /*count_include_pad=*/false));
    adaptive1 = register_module("adaptive1", std::make_shared<fx::nn::AdaptiveAvgPool1d>(5));
    adaptive2 = register_module(
        "adaptive2", std::make_shared<fx::nn::AdaptiveAvgPool2d>(fx::nn::PoolArg{std::nullopt, 3}));
  }
  fx::Value forward(const std::vector<fx::Value>& in) override {
    const fx::Value& x = in[0];
    fx::Value s = x.flatten(2);
    return fx::call("torch.cat",
                    fx::Value::list({(*max2)(x).flatten(1), (*avg)(x).flatten(1), (*adaptive2)(x).flatten(1),
                                     (*max1)(s).flatten(1), (*adaptive1)(s).flatten(1)}),
                    1);
  }
};

struct Case {
  std::string name;
  std::function<std::shared_ptr<fx::Module>()> build;
};

std::vector<Case> cases() {
  return {
      {"pooling", [] { return std::make_shared<Pooling>(); }},
      {"resnet18", [] { return fx::models::resnet18(); }},
      {"resnet50", [] { return fx::models::resnet50(); }},
      {"alexnet", [] { return fx::models::alexnet(); }},
      {"vgg11", [] { return fx::models::vgg11(); }},
      {"squeezenet1_0", [] { return fx::models::squeezenet1_0(); }},
      {"shufflenet_v2_x1_0", [] { return fx::models::shufflenet_v2_x1_0(); }},
      {"mobilenet_v2", [] { return fx::models::mobilenet_v2(); }},
      {"densenet121", [] { return fx::models::densenet121(); }},
      {"vit",
       [] { return std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10); }},
  };
}

at::Tensor find(const fx::StateDict& dict, const std::string& key, const std::string& file) {
  for (const auto& [k, t] : dict)
    if (k == key) return t;
  ADD_FAILURE() << file << " has no '" << key << "'";
  return {};
}

class Torchvision : public ::testing::TestWithParam<Case> {};

TEST_P(Torchvision, TracesAndRunsAsPyTorch) {
  const Case& c = GetParam();
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run (" << kOracleDir << ")";
  ASSERT_TRUE(expected().contains(c.name)) << c.name;
  const nlohmann::json& want = expected()[c.name];

  std::shared_ptr<fx::Module> model = c.build();
  fx::load_state_dict(*model, kOracleDir + "/" + c.name + ".state.pt");
  model->eval();

  std::unique_ptr<fx::GraphModule> gm = fx::symbolic_trace(*model);
  EXPECT_EQ(gm->graph().to_string(), want["graph"].get<std::string>());
  EXPECT_EQ(gm->code(), want["code"].get<std::string>());
  EXPECT_EQ(gm->to_string(), want["str"].get<std::string>());

  const std::string io_file = kOracleDir + "/" + c.name + ".io.pt";
  fx::StateDict io = fx::read_state_dict(io_file);
  at::Tensor input = find(io, "input", io_file), want_out = find(io, "output", io_file);
  ASSERT_TRUE(input.defined() && want_out.defined());

  torch::NoGradGuard no_grad;
  at::Tensor eager = (*model)(input).tensor();
  ASSERT_EQ(eager.sizes(), want_out.sizes());
  EXPECT_TRUE(torch::allclose(eager, want_out, /*rtol=*/1e-4, /*atol=*/1e-5))
      << "max |eager - PyTorch| = " << (eager - want_out).abs().max().item<double>();
  at::Tensor traced = (*gm)(input).tensor();
  EXPECT_TRUE(torch::equal(traced, eager))
      << "max |traced - eager| = " << (traced - eager).abs().max().item<double>();
}

INSTANTIATE_TEST_SUITE_P(Models, Torchvision, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Bad configurations are fx::Errors naming the module and the argument.
TEST(Pooling, BadArgumentsAreErrors) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const fx::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] {
              fx::nn::MaxPool2d(fx::nn::PoolArg{3, 3, 3});
            }),
            "MaxPool2d: kernel_size must be an int or a tuple of 2 ints, each positive, got (3, 3, 3)");
  EXPECT_EQ(message([] { fx::nn::MaxPool1d(2, 0); }),
            "MaxPool1d: stride must be an int or a tuple of 1 ints, each positive, got 0");
  EXPECT_EQ(message([] { fx::nn::AvgPool2d(2, std::nullopt, -1); }),
            "AvgPool2d: padding must be an int or a tuple of 2 ints, each non-negative, got -1");
  EXPECT_EQ(message([] {
              fx::nn::MaxPool2d(fx::nn::PoolArg{std::nullopt, 2});
            }),
            "MaxPool2d: kernel_size must be an int or a tuple of 2 ints, each positive, got (None, 2)");
  EXPECT_EQ(
      message([] {
        fx::nn::AdaptiveAvgPool2d(fx::nn::PoolArg{1, 2, 3});
      }),
      "AdaptiveAvgPool2d: output_size must be an int or a tuple of 2 ints or None, each non-negative, got "
      "(1, 2, 3)");
}

// clone() is a deep copy with the same configuration.
TEST(Pooling, CloneKeepsTheConfiguration) {
  fx::nn::MaxPool2d pool(fx::nn::PoolArg{3, 2}, 1, 0, 1, false, true);
  auto copy = std::dynamic_pointer_cast<fx::nn::MaxPool2d>(pool.clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->extra_repr(), pool.extra_repr());
  EXPECT_EQ(copy->extra_repr(), "kernel_size=(3, 2), stride=1, padding=0, dilation=1, ceil_mode=True");
  auto avg = std::dynamic_pointer_cast<fx::nn::AvgPool2d>(fx::nn::AvgPool2d(2).clone());
  ASSERT_TRUE(avg);
  EXPECT_EQ(avg->extra_repr(), "kernel_size=2, stride=2, padding=0");
}

}  // namespace
