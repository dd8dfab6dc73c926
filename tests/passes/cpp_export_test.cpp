// fx::export_cpp: the generated project translates every model of the corpus,
// and (CppExportBuild, the ctest `passes.cpp_export.build`, label `export`)
// builds with cmake against the LibTorch fxcpp is built against and computes
// what gm.run does.
#include <fx/capture.h>
#include <fx/codegen/cpp_export.h>
#include <fx/control_flow.h>
#include <fx/fx.h>
#include <fx/models/alexnet.h>
#include <fx/models/densenet.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/shufflenetv2.h>
#include <fx/models/squeezenet.h>
#include <fx/models/vgg.h>
#include <fx/models/vision_transformer.h>

#include <gtest/gtest.h>

#include <functional>

#include "export_util.h"

namespace {

using export_test::ScratchDir;
using fx::Value;

// Methods, getitem on sizes, tensor lists, tuples and tensors, Python
// operators on ints and tensors, torch.* and F.* functions, and a tuple output.
struct Mixed : fx::Module {
  std::shared_ptr<fx::nn::Linear> linear;
  std::shared_ptr<fx::nn::LayerNorm> norm;
  at::Tensor scale;
  Mixed() : fx::Module("Mixed") {
    linear = register_module("linear", std::make_shared<fx::nn::Linear>(8, 12));
    norm = register_module("norm", std::make_shared<fx::nn::LayerNorm>(std::vector<int64_t>{6}));
    scale = register_parameter("scale", torch::randn({6}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0];            // (4, 8)
    Value y = (*linear)(x);     // (4, 12)
    Value batch = y.size()[0];  // int
    Value half = fx::call("operator.floordiv", y.shape()[1], 2);
    Value parts = y.chunk(2, fx::kw("dim", 1));  // two (4, 6)
    Value a = parts[0] + parts[1] * 2.0 - Value(scale);
    Value b = (*norm)(a).view(batch, half, -1);                       // (4, 6, 1)
    Value c = fx::call("torch.relu", b).squeeze(-1).transpose(0, 1);  // (6, 4)
    Value d = fx::call("torch.nn.functional.gelu", c);
    Value e = d[Value::tuple({Value::slice(fx::None, fx::None), Value::slice(1, fx::None)})];  // (6, 3)
    Value m = fx::call("torch.max", e, fx::kw("dim", 1));  // (values, indices)
    Value scaled = m[0] / fx::call("operator.mul", batch, 2) + e.mean(1);
    Value cat = fx::call("torch.cat", Value::list({scaled.unsqueeze(1), e}), fx::kw("dim", 1));
    return Value::tuple({cat.sigmoid(), m[1]});
  }
};

// A leaf module that is not an fx::nn module.
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

struct Case {
  std::string name;
  std::function<std::shared_ptr<fx::Module>()> build;
  std::vector<int64_t> input_shape;
};

std::vector<Case> corpus() {
  return {
      {"resnet18", [] { return fx::models::resnet18(); }, {1, 3, 64, 64}},
      {"resnet50", [] { return fx::models::resnet50(); }, {1, 3, 64, 64}},
      {"alexnet", [] { return fx::models::alexnet(); }, {1, 3, 64, 64}},
      {"vgg11", [] { return fx::models::vgg11(); }, {1, 3, 64, 64}},
      {"squeezenet1_0", [] { return fx::models::squeezenet1_0(); }, {1, 3, 64, 64}},
      {"shufflenet_v2_x1_0", [] { return fx::models::shufflenet_v2_x1_0(); }, {1, 3, 64, 64}},
      {"mobilenet_v2", [] { return fx::models::mobilenet_v2(); }, {1, 3, 64, 64}},
      {"densenet121", [] { return fx::models::densenet121(); }, {1, 3, 64, 64}},
      {"vit",
       [] { return std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10); },
       {2, 3, 32, 32}},
      {"mixed", [] { return std::make_shared<Mixed>(); }, {4, 8}},
  };
}

std::unique_ptr<fx::GraphModule> traced(const Case& c) {
  torch::manual_seed(0);
  auto model = c.build();
  model->eval();
  return fx::symbolic_trace(*model);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CppExport, EveryCorpusModelTranslates) {
  for (const auto& c : corpus()) {
    SCOPED_TRACE(c.name);
    auto gm = traced(c);
    ScratchDir dir("cpp_export_" + c.name);
    ASSERT_NO_THROW(fx::export_cpp(*gm, dir.str("project"))) << c.name;
    std::string forward = export_test::read_text(dir.path() / "project" / "forward.cpp");
    // One statement per node: every call_* and get_attr node declares its variable
    // (torch._assert, which has no value, is a TORCH_CHECK).
    size_t nodes = 0, asserts = 0;
    for (const fx::Node* n : gm->graph().nodes()) {
      if (n->op() == fx::Op::placeholder || n->op() == fx::Op::output) continue;
      ++nodes;
      if (n->target() == "torch._assert") ++asserts;
    }
    EXPECT_EQ(count(forward, "  TORCH_CHECK("), asserts);
    EXPECT_GE(count(forward, " = "), nodes - asserts);
    for (const char* f : {"model.h", "model.cpp", "main.cpp", "CMakeLists.txt", "weights.pt"})
      EXPECT_TRUE(std::filesystem::exists(dir.path() / "project" / f)) << f;
  }
}

TEST(CppExport, Resnet18IsReadable) {
  auto gm = traced(corpus()[0]);
  ScratchDir dir("cpp_export_text");
  fx::export_cpp(*gm, dir.str("p"), {.class_name = "ResNet18"});
  std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  for (const char* line :
       {"at::Tensor ResNet18::forward(const at::Tensor& x) const {\n",
        "  // conv1: Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)\n"
        "  at::Tensor conv1 = at::conv2d(x, self.conv1_weight, {}, {2, 2}, {3, 3}, {1, 1}, 1);\n",
        "  at::Tensor bn1 = at::batch_norm(conv1, self.bn1_weight, self.bn1_bias, self.bn1_running_mean, "
        "self.bn1_running_var, false, 0.1, 1e-05, /*cudnn_enabled=*/true);\n",
        "  at::Tensor relu = at::relu_(bn1);\n", "  at::Tensor add = (layer1_0_bn2 + maxpool);\n",
        "  at::Tensor flatten = at::flatten(avgpool, 1);\n",
        "  at::Tensor fc = at::linear(flatten, self.fc_weight, self.fc_bias);\n", "  return fc;\n"})
    EXPECT_NE(forward.find(line), std::string::npos) << line << "\nnot in\n" << forward;
  std::string header = export_test::read_text(dir.path() / "p" / "model.h");
  EXPECT_NE(header.find("  at::Tensor layer1_0_conv1_weight;  // layer1.0.conv1.weight\n"),
            std::string::npos);
  // The weights file is keyed by the PyTorch names and holds the module's tensors.
  auto weights = export_test::load_ivalue(dir.path() / "p" / "weights.pt").toGenericDict();
  EXPECT_TRUE(weights.at("fc.weight").toTensor().equal(gm->get_tensor("fc.weight")));
}

TEST(CppExport, MixedModelIsReadable) {
  auto gm = traced(corpus().back());
  ScratchDir dir("cpp_export_mixed_text");
  fx::export_cpp(*gm, dir.str("p"));
  std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  for (const char* line :
       {"c10::IValue FxModule::forward(const at::Tensor& x) const {\n",
        "  std::vector<int64_t> size = linear.sizes().vec();\n", "  int64_t getitem = size[0];\n",
        "  int64_t floordiv = py_floordiv(getitem_1, 2);\n",
        "  std::vector<at::Tensor> chunk = linear.chunk(2, 1);\n",
        "  at::Tensor view = norm.view({getitem, floordiv, -1});\n",
        "  at::Tensor gelu = at::gelu(transpose, \"none\");\n",
        "  at::Tensor getitem_4 = gelu.index({at::indexing::Slice(), at::indexing::Slice(1)});\n",
        "  auto max_1 = at::max(getitem_4, 1);\n", "  at::Tensor getitem_5 = std::get<0>(max_1);\n",
        "  return c10::ivalue::Tuple::create({sigmoid, getitem_6});\n"})
    EXPECT_NE(forward.find(line), std::string::npos) << line << "\nnot in\n" << forward;
}

// A captured ATen graph: a factory's dtype, layout, device and pin_memory
// are TensorOptions in C++, whose one-by-one overload has no defaults; an
// operator C++ has only as a method (view, expand) is called as one.
TEST(CppExport, AnAtenGraphCallsWhatCxxHas) {
  auto gm = fx::capture(
      [](const std::vector<c10::IValue>& in) {
        at::Tensor y =
            in[0].toTensor() + torch::empty({0}, torch::kUInt8).numel() + torch::ones({3}, torch::kFloat);
        return y.view({3, 1}).expand({3, 2}).clone(at::MemoryFormat::Contiguous);
      },
      {torch::randn({3})});
  ScratchDir dir("cpp_export_factory");
  fx::export_cpp(*gm, dir.str("p"));
  const std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  for (const char* call :
       {"at::empty(at::IntArrayRef{0}, at::kByte, c10::nullopt, c10::nullopt, c10::nullopt, c10::nullopt);",
        "at::ones({3}, at::kFloat, c10::nullopt, c10::nullopt, c10::nullopt);", "add_1.view({3, 1});",
        "view.expand({3, 2});", "at::clone(expand, at::MemoryFormat::Contiguous);"})
    EXPECT_NE(forward.find(call), std::string::npos) << call << "\nnot in\n" << forward;
}

// torch.export writes Python's numbers where a Tensor overload takes a
// tensor (`add.Tensor(x, 1)`, a wrapped number); C++ calls the Scalar
// overload, which computes the same.
TEST(CppExport, ANumberForATensorParameterTakesTheScalarOverload) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* add = g->call_function("torch.ops.aten.add.Tensor", {x, int64_t{1}});
  g->output(g->call_function("torch.ops.aten.mul.Tensor", {add, 2.5}));
  std::map<std::string, fx::GraphModule::Attr> none;
  fx::GraphModule gm(none, std::move(g));
  ScratchDir dir("cpp_export_wrapped_number");
  fx::export_cpp(gm, dir.str("p"));
  const std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  EXPECT_NE(
      forward.find(
          "at::Tensor add_tensor = at::add(x, 1);\n  at::Tensor mul_tensor = at::mul(add_tensor, 2.5);"),
      std::string::npos)
      << forward;
}

// fx::cond and fx::while_loop, captured: a branch that reads a tensor made
// before the capture (a weight of the branch), and a loop whose count
// depends on the input.
std::unique_ptr<fx::GraphModule> control_flow_program() {
  torch::manual_seed(0);
  at::Tensor w = torch::randn({3, 4});
  auto program = [w](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    at::Tensor y = fx::cond(
        x.sum() > 0, [w](const fx::Tensors& a) { return fx::Tensors{a[0].sin() * w}; },
        [](const fx::Tensors& a) { return fx::Tensors{a[0].cos() + 1}; }, {x})[0];
    fx::Tensors loop = fx::while_loop([](const fx::Tensors& c) { return c[0].sum() < 40; },
                                      [](const fx::Tensors& c) {
                                        return fx::Tensors{c[0] + 1, c[1] * 2};
                                      },
                                      {y, x});
    return c10::ivalue::Tuple::create({loop[0], loop[1]});
  };
  return fx::capture(program, {torch::rand({3, 4}) + 1});
}

TEST(CppExport, CondAndWhileLoopAreAnIfAndAWhile) {
  auto gm = control_flow_program();
  ScratchDir dir("cpp_export_control_flow");
  fx::export_cpp(*gm, dir.str("p"));
  const std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  for (const char* text :
       {"  std::vector<at::Tensor> cond;\n  if (gt.item<bool>()) {\n    at::Tensor sin = at::sin(arg0_1);\n",
        "    cond = {mul};\n  } else {\n    at::Tensor cos = at::cos(arg0_1);\n",
        "    cond = {add};\n  }\n  at::Tensor getitem = cond[0];\n",
        "  std::vector<at::Tensor> while_loop = {getitem, arg0_1};\n  while (true) {\n",
        "at::sum(while_loop[0]", "    if (!lt.item<bool>()) break;\n",
        "    while_loop = {add_1, mul_1};\n  }\n"})
    EXPECT_NE(forward.find(text), std::string::npos) << text << "\nnot in\n" << forward;
  // The branch's weight is a member of the class, named by its path, with
  // one underscore where the path has `._`: C++ reserves every identifier
  // with a double underscore.
  const std::string header = export_test::read_text(dir.path() / "p" / "model.h");
  EXPECT_NE(header.find("true_graph_0_tensor_constant0"), std::string::npos) << header;
  for (const std::string& text : {header, forward}) EXPECT_EQ(text.find("__"), std::string::npos) << text;

  // A subgraph read by something other than cond or while_loop.
  fx::Graph& graph = gm->graph();
  fx::Node* branch = graph.find_nodes(fx::Op::get_attr, fx::Target("true_graph_0")).at(0);
  {
    auto at = graph.inserting_before(graph.output_node());
    graph.call_function("torch.ops.aten.add.Tensor",
                        {graph.find_nodes(fx::Op::placeholder, fx::Target("arg0_1")).at(0), branch});
  }
  try {
    fx::export_cpp(*gm, dir.str("misuse"));
    FAIL() << "a subgraph used as a value was exported";
  } catch (const fx::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("uses the subgraph 'true_graph_0', which only cond and while_loop take"),
        std::string::npos)
        << e.what();
  }
}

// F.* Python functions bind as torch 2.14's signatures say: keywords in
// any order, defaults filled in; a keyword the function lacks is an
// fx::Error that names the node and quotes Python's TypeError.
TEST(CppExport, FunctionalCallsBindByTorchsSignatures) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* leaky =
      g->call_function("torch.nn.functional.leaky_relu", {x}, {{"inplace", false}, {"negative_slope", 0.2}});
  fx::Node* hard = g->call_function("torch.nn.functional.hardtanh", {leaky, -2.0});
  fx::Node* soft = g->call_function("torch.nn.functional.log_softmax", {hard}, {{"dim", int64_t{1}}});
  g->output(
      g->call_function("torch.nn.functional.layer_norm", {soft, fx::List{{int64_t{4}}}}, {{"eps", 1e-3}}));
  std::map<std::string, fx::GraphModule::Attr> none;
  fx::GraphModule gm(none, std::move(g));
  ScratchDir dir("cpp_export_functional");
  fx::export_cpp(gm, dir.str("p"));
  const std::string forward = export_test::read_text(dir.path() / "p" / "forward.cpp");
  for (const char* call :
       {"at::leaky_relu(x, 0.2);", "at::hardtanh(leaky_relu, -2.0, 1.0);", "at::log_softmax(hardtanh, 1);",
        "at::layer_norm(log_softmax, {4}, {}, {}, 0.001);"})
    EXPECT_NE(forward.find(call), std::string::npos) << call << "\nnot in\n" << forward;

  auto g2 = std::make_unique<fx::Graph>();
  fx::Node* x2 = g2->placeholder("x");
  g2->output(g2->call_function("torch.nn.functional.relu", {x2}, {{"in_place", true}}));
  fx::GraphModule wrong(none, std::move(g2));
  try {
    fx::export_cpp(wrong, dir.str("wrong"));
    FAIL() << "F.relu(x, in_place=True) was exported";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'relu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Got an unexpected keyword argument 'in_place'"), std::string::npos)
        << e.what();
  }
}

TEST(CppExport, BadInputIsAnError) {
  auto gm = traced(corpus().back());
  ScratchDir dir("cpp_export_bad");
  std::ofstream(dir.path() / "a_file") << "x";
  EXPECT_THROW(fx::export_cpp(*gm, dir.str("a_file/p")), fx::Error);
  EXPECT_THROW(fx::export_cpp(*gm, dir.str("missing/p")), fx::Error);
  EXPECT_THROW(fx::export_cpp(*gm, dir.str("p"), {.class_name = "class"}), fx::Error);
  EXPECT_THROW(fx::export_cpp(*gm, dir.str("p"), {.class_name = "9lives"}), fx::Error);

  // A function with no C++ spelling: the message names the node and its target.
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* s = g->call_function("math.sqrt", {g->call_method("sum", {x})});
  g->output(s);
  std::map<std::string, fx::GraphModule::Attr> none;
  fx::GraphModule unsupported(none, std::move(g));
  try {
    fx::export_cpp(unsupported, dir.str("sqrt"));
    FAIL() << "math.sqrt was exported";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'sqrt' (call_function math.sqrt)"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "sqrt"));

  // A method whose arguments fit no ATen schema.
  auto g2 = std::make_unique<fx::Graph>();
  fx::Node* x2 = g2->placeholder("x");
  g2->output(g2->call_method("view", {x2, "not a size"}));
  fx::GraphModule bad_view(none, std::move(g2));
  try {
    fx::export_cpp(bad_view, dir.str("view"));
    FAIL() << "view('not a size') was exported";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'view' (call_method view) fits no ATen schema"),
              std::string::npos)
        << e.what();
  }

  auto custom = std::make_shared<WithCustom>();
  auto custom_gm = fx::symbolic_trace(*custom);
  try {
    fx::export_cpp(*custom_gm, dir.str("custom"));
    FAIL() << "a custom leaf module was exported";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'custom' (call_module custom)"), std::string::npos)
        << e.what();
  }
}

// ---- building and running the generated projects ------------------------------

// cmake-configures, builds and runs the project exported from the case's
// model, and compares its output with gm.run's.
void build_and_compare(const Case& c) {
  auto gm = traced(c);
  ScratchDir dir("cpp_export_build_" + c.name);
  const auto project = dir.path() / "project";
  fx::export_cpp(*gm, project.string());

  auto log = dir.path() / "build.log";
  int rc = export_test::cmake_build(project, "", log);
  ASSERT_EQ(rc, 0) << export_test::read_text(log);

  torch::manual_seed(1);
  at::Tensor x = torch::randn(c.input_shape);
  export_test::save_ivalue(dir.path() / "input.pt", x);
  rc = export_test::run_model(project, dir.path() / "input.pt", dir.path() / "output.pt", log);
  ASSERT_EQ(rc, 0) << export_test::read_text(log);

  c10::IValue got = export_test::load_ivalue(dir.path() / "output.pt");
  c10::IValue want;
  {
    torch::NoGradGuard no_grad;
    want = gm->run({x});
  }
  export_test::expect_same_outputs(got, want, 1e-4, 1e-5);
}

// The control-flow program's project, on an input for each branch (and a
// different number of iterations for each).
void build_and_compare_control_flow() {
  auto gm = control_flow_program();
  ScratchDir dir("cpp_export_build_control_flow");
  const auto project = dir.path() / "project";
  fx::export_cpp(*gm, project.string());
  auto log = dir.path() / "build.log";
  int rc = export_test::cmake_build(project, "", log);
  ASSERT_EQ(rc, 0) << export_test::read_text(log);
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign > 0 ? "true branch" : "false branch");
    at::Tensor x = (torch::rand({3, 4}) + 0.5) * sign;
    export_test::save_ivalue(dir.path() / "input.pt", x);
    rc = export_test::run_model(project, dir.path() / "input.pt", dir.path() / "output.pt", log);
    ASSERT_EQ(rc, 0) << export_test::read_text(log);
    export_test::expect_same_outputs(export_test::load_ivalue(dir.path() / "output.pt"), gm->run({x}), 1e-5,
                                     1e-6);
  }
}

// Compiling a LibTorch project takes a minute or more: these run only in the
// ctest `passes.cpp_export.build` (label `export`), which sets
// FXCPP_EXPORT_BUILD=1; the rest of the corpus (Corpus/...) with
// FXCPP_EXPORT_BUILD=all.
class CppExportBuild : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* env = std::getenv("FXCPP_EXPORT_BUILD");
    if (!env) GTEST_SKIP() << "set FXCPP_EXPORT_BUILD=1 to build the exported projects";
    const bool always = GetParam() == "mixed" || GetParam() == "resnet18" || GetParam() == "vit" ||
                        GetParam() == "control_flow";
    if (!always && std::string(env) != "all")
      GTEST_SKIP() << "set FXCPP_EXPORT_BUILD=all to build every model";
  }
};

TEST_P(CppExportBuild, BuildsAndComputesWhatTheGraphModuleComputes) {
  if (GetParam() == "control_flow") return build_and_compare_control_flow();
  for (const auto& c : corpus())
    if (c.name == GetParam()) return build_and_compare(c);
  FAIL() << "no case " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, CppExportBuild,
                         ::testing::Values("mixed", "resnet18", "vit", "control_flow"));
INSTANTIATE_TEST_SUITE_P(Corpus, CppExportBuild,
                         ::testing::Values("resnet50", "alexnet", "vgg11", "squeezenet1_0",
                                           "shufflenet_v2_x1_0", "mobilenet_v2", "densenet121"));

}  // namespace
