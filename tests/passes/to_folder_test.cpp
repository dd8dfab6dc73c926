// fx::to_folder against torch.fx 2.14's GraphModule.to_folder: module.py
// byte for byte (see to_folder_oracle.py), and the oracle's Python
// (FXCPP_PYTHON) importing the folder and computing what the GraphModule
// computes.
#include "oracle.h"

#include <fx/codegen/to_folder.h>
#include <fx/fx.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/state_dict.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "export_util.h"

namespace {

using export_test::ScratchDir;
using fx::Value;

using passes_test::expected;

// to_folder_oracle.py's Small.
struct Small : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> conv;
  std::shared_ptr<fx::nn::BatchNorm2d> bn;
  std::shared_ptr<fx::nn::Linear> fc;
  at::Tensor scale, offset;
  Small() : fx::Module("Small") {
    conv = register_module(
        "conv", std::make_shared<fx::nn::Conv2d>(3, 4, std::vector<int64_t>{3}, std::vector<int64_t>{1},
                                                 std::vector<int64_t>{1}));
    bn = register_module("bn", std::make_shared<fx::nn::BatchNorm2d>(4));
    fc = register_module("fc", std::make_shared<fx::nn::Linear>(4 * 8 * 8, 10));
    scale = register_parameter("scale", torch::ones({10}));
    offset = register_buffer("offset", torch::zeros({10}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = fx::call("torch.relu", (*bn)((*conv)(in[0])));
    x = x.flatten(1);
    return (*fc)(x)*Value(scale) + Value(offset);
  }
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Drops the lines that build the children torch.fx pickles (its
// `setattr(self, '<name>', torch.load(r'<dir>/<name>.pt', weights_only=False)) # repr`
// lines; fxcpp's constructors and add_module lines): everything else must be
// equal.
std::string without_children(const std::string& text, const std::vector<std::string>& pickled) {
  std::string out;
  for (const auto& line : lines_of(text)) {
    bool drop = line.rfind("        self.get_submodule(", 0) == 0;
    for (const auto& name : pickled) drop = drop || line.rfind("        setattr(self, '" + name + "', ", 0) == 0;
    if (!drop) out += line + "\n";
  }
  return out;
}

// Imports `folder` with the oracle's Python (FXCPP_PYTHON), runs FxModule on `input` and returns its output.
at::Tensor run_in_python(const ScratchDir& dir, const std::string& package, const at::Tensor& input,
                         bool training) {
  export_test::save_ivalue(dir.path() / "input.pt", input);
  std::string script =
      "import sys, torch\n"
      "sys.path.insert(0, r'" +
      dir.str() +
      "')\n"
      "from " +
      package +
      " import FxModule\n"
      "m = FxModule()\n"
      "m.train(" +
      (training ? "True" : "False") +
      ")\n"
      "with torch.no_grad():\n"
      "    y = m(torch.load(r'" +
      dir.str("input.pt") +
      "'))\n"
      "torch.save({'output': y}, r'" +
      dir.str("output.pt") + "')\n";
  std::ofstream(dir.path() / "run.py") << script;
  int rc = export_test::run(std::string(FXCPP_PYTHON) + " '" + dir.str("run.py") + "'", dir.path() / "python.log");
  if (rc != 0) throw fx::Error("python failed:\n" + export_test::read_text(dir.path() / "python.log"));
  fx::StateDict out = fx::read_state_dict(dir.str("output.pt"));
  return out.at(0).second;
}

void check_against_fx(fx::GraphModule& gm, const std::string& name, const std::vector<int64_t>& input_shape) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  ScratchDir dir("to_folder_" + name);
  const std::string package = name + "_pkg";
  fx::to_folder(gm, dir.str(package), "FxModule");

  std::string ours =
      replace_all(export_test::read_text(dir.path() / package / "module.py"), dir.str(package), "<dir>");
  const auto& fx_side = expected().at(name);
  auto pickled = fx_side["pickled"].get<std::vector<std::string>>();
  std::string theirs = fx_side["module_py"].get<std::string>();
  if (pickled.empty())
    EXPECT_EQ(ours, theirs);
  else
    EXPECT_EQ(without_children(ours, pickled), without_children(theirs, pickled));
  EXPECT_EQ(export_test::read_text(dir.path() / package / "__init__.py"), "from .module import *");

  torch::manual_seed(3);
  at::Tensor x = torch::randn(input_shape);
  at::Tensor want = gm.run({x}).toTensor();
  at::Tensor got = run_in_python(dir, package, x, gm.is_training());
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-5)) << (got - want).abs().max();
}

TEST(ToFolder, SmallModelMatchesTorchFxAndRunsInPython) {
  auto model = std::make_shared<Small>();
  model->eval();
  // Non-trivial statistics, so that BatchNorm's buffers matter.
  model->bn->running_mean.normal_();
  model->bn->running_var.uniform_(0.5, 2.0);
  model->offset.normal_();
  auto gm = fx::symbolic_trace(*model);
  check_against_fx(*gm, "small", {2, 3, 8, 8});
}

TEST(ToFolder, Resnet18MatchesTorchFxAndRunsInPython) {
  auto model = fx::models::resnet18();
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  check_against_fx(*gm, "resnet18", {1, 3, 64, 64});
}

// MultiheadAttention (a constructor, not its repr), nested parameters, torch._assert.
TEST(ToFolder, VisionTransformerMatchesTorchFxAndRunsInPython) {
  torch::manual_seed(0);
  auto model = std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  model->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.normal_(0.0, 0.1);  // the head starts at zero
  auto gm = fx::symbolic_trace(*model);
  check_against_fx(*gm, "vit", {2, 3, 32, 32});
}

TEST(ToFolder, TensorsOfContainersAreDeclared) {
  // get_attr of a nested parameter: the container made for `inner` holds it.
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* w = g->get_attr("inner.w");
  fx::Node* b = g->get_attr("inner.b");
  fx::Node* y = g->call_function("operator.add", {g->call_function("operator.mul", {x, w}), b});
  g->output(y);
  torch::manual_seed(0);
  std::map<std::string, fx::GraphModule::Attr> root{
      {"inner.w", fx::GraphModule::Attr::parameter(torch::randn({4}))}, {"inner.b", torch::randn({4})}};
  fx::GraphModule gm(root, std::move(g));
  ScratchDir dir("to_folder_nested");
  fx::to_folder(gm, dir.str("nested_pkg"));
  std::string text = export_test::read_text(dir.path() / "nested_pkg" / "module.py");
  EXPECT_NE(
      text.find(
          "        setattr(self, 'inner', Module())\n"
          "        self.get_submodule('inner').register_buffer('b', torch.empty([4], dtype=torch.float32))\n"
          "        self.get_submodule('inner').register_parameter('w', torch.nn.Parameter(torch.empty([4], "
          "dtype=torch.float32)))\n"),
      std::string::npos)
      << text;
  at::Tensor x_in = torch::randn({4});
  at::Tensor got = run_in_python(dir, "nested_pkg", x_in, gm.is_training());
  EXPECT_TRUE(torch::allclose(got, gm.run({x_in}).toTensor()));
}

// Upsample's repr quotes its mode in torch 2.x (`mode='nearest'`): the
// constructor line is the repr, valid Python.
TEST(ToFolder, UpsampleRunsInPython) {
  struct Up : fx::Module {
    std::shared_ptr<fx::nn::Upsample> up;
    Up() : fx::Module("Up") {
      fx::nn::Upsample::Options o;
      o.scale_factor = {2.0};
      up = register_module("up", std::make_shared<fx::nn::Upsample>(o));
    }
    Value forward(const std::vector<Value>& in) override { return (*up)(in[0]); }
  } model;
  auto gm = fx::symbolic_trace(model);
  ScratchDir dir("to_folder_upsample");
  fx::to_folder(*gm, dir.str("upsample_pkg"));
  std::string text = export_test::read_text(dir.path() / "upsample_pkg" / "module.py");
  EXPECT_NE(text.find("setattr(self, 'up', Upsample(scale_factor=2.0, mode='nearest'))"),
            std::string::npos)
      << text;
  at::Tensor x = torch::randn({1, 2, 3, 3});
  at::Tensor got = run_in_python(dir, "upsample_pkg", x, gm->is_training());
  EXPECT_TRUE(torch::equal(got, gm->run({x}).toTensor()));
}

// A leaf module that is not an fx::nn module: PyTorch has no constructor for it.
struct Custom : fx::Module {
  Custom() : fx::Module("Custom") {}
  bool is_standard_leaf() const override { return true; }
  Value forward(const std::vector<Value>& in) override { return in[0] + 1; }
};

struct WithCustom : fx::Module {
  std::shared_ptr<Custom> custom;
  WithCustom() : fx::Module("WithCustom") { custom = register_module("custom", std::make_shared<Custom>()); }
  Value forward(const std::vector<Value>& in) override { return (*custom)(in[0]); }
};

TEST(ToFolder, BadInputIsAnError) {
  auto model = std::make_shared<Small>();
  auto gm = fx::symbolic_trace(*model);
  ScratchDir dir("to_folder_bad");
  std::ofstream(dir.path() / "a_file") << "x";
  // The parent is a file / does not exist: nothing can be created there.
  EXPECT_THROW(fx::to_folder(*gm, dir.str("a_file/pkg")), fx::Error);
  EXPECT_THROW(fx::to_folder(*gm, dir.str("missing/pkg")), fx::Error);
  try {
    fx::to_folder(*gm, dir.str("ok"), "not an identifier");
    FAIL() << "a module name with spaces was accepted";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'not an identifier'"), std::string::npos) << e.what();
  }

  auto custom_model = std::make_shared<WithCustom>();
  auto custom_gm = fx::symbolic_trace(*custom_model);
  try {
    fx::to_folder(*custom_gm, dir.str("custom"));
    FAIL() << "a custom leaf module was written";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'custom' (Custom)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "custom"));
}

}  // namespace
