// A module registered from outside fx::nn goes through everything the traits
// serve: module_spec / make_module, the file format, the graph drawer and
// export_cpp (docs/nn.md, "Adding a module").
#include <fx/codegen/cpp_export.h>
#include <fx/error.h>
#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/module_spec.h>
#include <fx/nn.h>
#include <fx/passes/graph_drawer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using fx::Value;
using testing::HasSubstr;

// mylib.Scale(factor=2.0): x * gain * factor, with a learned gain.
class Scale : public fx::nn::StandardModule {
 public:
  explicit Scale(double factor_ = 2.0) : StandardModule("mylib.Scale", {"x"}), factor(factor_) {
    gain = register_parameter("gain", torch::rand({4}) + 0.5);
  }
  Value forward(const std::vector<Value>& in) override { return in[0] * gain * factor; }
  fx::nn::ModulePtr clone(const fx::nn::OptionalDevice& device = c10::nullopt) const override {
    return fx::nn::finish_clone(std::make_shared<Scale>(factor), *this, device);
  }
  double factor;
  at::Tensor gain;
};

void register_scale() {
  static const bool once = [] {
    fx::nn::register_module_traits(fx::nn::TraitsOf<Scale>{
        .type = "mylib.Scale",
        .torch_typename = "mylib.modules.Scale",
        .params = {{"factor", 2.0}},
        .describe = [](const Scale& m) { return fx::Args{m.factor}; },
        .make = [](const fx::nn::SpecArgs& a) { return std::make_shared<Scale>(a.real("factor")); },
        .constants =
            [](const Scale& m) {
              return fx::nn::ModuleConstants{{"factor", std::to_string(m.factor)}};
            },
        .emit_cpp = [](fx::nn::CppModuleCall& w, const Scale& m) {
          std::string x = w.input(), gain = w.weight("gain");
          return fx::nn::CppCall{"(" + x + " * " + gain + " * " + w.real(m.factor) + ")"};
        }});
    return true;
  }();
  (void)once;
}

struct Model : fx::Module {
  std::shared_ptr<Scale> scale;
  Model() : fx::Module("Model") { scale = register_module("scale", std::make_shared<Scale>(3.0)); }
  Value forward(const std::vector<Value>& in) override { return fx::call("torch.relu", (*scale)(in[0])); }
};

TEST(ModuleTraits, ARegisteredModuleIsDescribedAndConstructed) {
  register_scale();
  Scale s(3.0);
  fx::ModuleSpec spec = fx::module_spec(s);
  EXPECT_EQ(spec, (fx::ModuleSpec{"mylib.Scale", {{"factor", 3.0}}}));
  auto made = std::dynamic_pointer_cast<Scale>(fx::make_module(spec));
  ASSERT_TRUE(made);
  EXPECT_EQ(made->factor, 3.0);
  EXPECT_EQ(std::dynamic_pointer_cast<Scale>(fx::make_module({"mylib.Scale", {}}))->factor, 2.0);
  EXPECT_THAT([] { fx::make_module({"mylib.Scale", {{"gain", 1.0}}}); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("mylib.Scale: unexpected keyword argument 'gain'")));
}

TEST(ModuleTraits, ARegisteredModuleRoundTripsThroughTheFile) {
  register_scale();
  torch::manual_seed(0);
  Model m;
  auto gm = fx::symbolic_trace(m);
  ASSERT_EQ(gm->graph().find_nodes(fx::Op::call_module, fx::Target("scale")).size(), 1u);
  auto back = fx::load_from_bytes(fx::save_to_bytes(*gm));
  auto* scale = dynamic_cast<Scale*>(back->get_submodule("scale"));
  ASSERT_NE(scale, nullptr) << "the file rebuilt the leaf from its traits";
  EXPECT_EQ(scale->factor, 3.0);
  at::Tensor x = torch::randn({2, 4});
  EXPECT_TRUE(back->run({x}).toTensor().equal(gm->run({x}).toTensor()));
  EXPECT_TRUE(back->run({x}).toTensor().equal(torch::relu(x * m.scale->gain * 3.0)));
}

TEST(ModuleTraits, TheDrawerShowsARegisteredModulesTypenameAndConstants) {
  register_scale();
  Model m;
  auto gm = fx::symbolic_trace(m);
  std::string dot = fx::passes::FxGraphDrawer(*gm, "model").get_main_dot_graph().to_string();
  EXPECT_THAT(dot, HasSubstr("mylib.modules.Scale"));
  EXPECT_THAT(dot, HasSubstr("factor: " + std::to_string(3.0)));
}

TEST(ModuleTraits, ExportCppWritesARegisteredModulesCall) {
  register_scale();
  Model m;
  auto gm = fx::symbolic_trace(m);
  auto dir = std::filesystem::temp_directory_path() / ("fx_traits_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  fx::export_cpp(*gm, dir.string());
  std::ifstream in(dir / "forward.cpp");
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  EXPECT_THAT(text.str(), HasSubstr("(x * self.scale_gain * 3.0)"));
}

TEST(ModuleTraits, MisuseIsAnError) {
  register_scale();
  auto no_make = fx::nn::ModuleTraits{.type = "mylib.Broken", .describe = [](const fx::Module&) { return fx::Args{}; }};
  EXPECT_THAT([&] { fx::nn::register_module_traits(no_make); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("mylib.Broken needs both describe and make")));
  EXPECT_THAT([] { fx::nn::register_module_traits(*fx::nn::find_module_traits("mylib.Scale")); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("mylib.Scale is registered already")));
  // A class that merely carries a registered name is not described as that class.
  struct Impostor : fx::nn::StandardModule {
    Impostor() : StandardModule("torch.nn.Linear") {}
    Value forward(const std::vector<Value>& in) override { return in[0]; }
  } impostor;
  EXPECT_THAT([&] { fx::module_spec(impostor); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("a module named torch.nn.Linear is not fxcpp's class")));
}

}  // namespace
