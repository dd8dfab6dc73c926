// FxGraphDrawer against torch.fx 2.14's FxGraphDrawer with pydot 4
// (graph_drawer_oracle.py): the DOT text of a small model (each option,
// before and after ShapeProp) and of resnet18, mobilenet_v2 and a small vit
// after ShapeProp is byte for byte what FX prints. Rendering runs Graphviz.
#include "oracle.h"

#include <fx/fx.h>
#include <fx/graph_module.h>
#include <fx/models/cond_and_while_loop.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/passes/graph_drawer.h>
#include <fx/passes/shape_prop.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "small_model.h"

namespace {

using fx::passes::FxGraphDrawer;
using fx::passes::ShapeProp;
using fxcpp_tests::Small;
using nlohmann::json;

using passes_test::expected;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FxGraphDrawer, SmallModelAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  Small m;
  auto gm = fx::symbolic_trace(m);
  EXPECT_EQ(FxGraphDrawer(*gm, "small").get_dot_graph().to_string(),
            expected().at("small").get<std::string>());
  EXPECT_EQ(FxGraphDrawer(*gm, "small", true, true).get_dot_graph().to_string(),
            expected().at("small_no_getattr_no_params").get<std::string>());
  EXPECT_EQ(FxGraphDrawer(*gm, "small", false, false, false).get_dot_graph().to_string(),
            expected().at("small_node_names").get<std::string>());
  ShapeProp(*gm).propagate({torch::randn({2, 3, 5, 5}), torch::randn({2, 2})});
  EXPECT_EQ(FxGraphDrawer(*gm, "small").get_dot_graph().to_string(),
            expected().at("small_shapes").get<std::string>());
}

// pydot's quoting of names that are DOT keywords (graph_drawer_oracle.py's
// keywords_graph): a node's own statement leaves `node` and `edge` bare, an
// edge and the graph's name quote them; a single kwarg is written on one line.
TEST(FxGraphDrawer, KeywordNamesAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  auto g = std::make_unique<fx::Graph>();
  std::vector<fx::Node*> placeholders;
  for (const char* name : {"node", "strict", "edge", "digraph", "subgraph"})
    placeholders.push_back(g->placeholder(name));
  fx::Node* acc = placeholders[0];
  for (size_t i = 1; i < placeholders.size(); ++i)
    acc = g->call_function("operator.add", {acc, placeholders[i]});
  g->output(g->call_function("torch.cat", {fx::List{{acc, placeholders[0]}}}, {{"dim", 0}}));
  fx::GraphModule gm(std::map<std::string, fx::GraphModule::Attr>{}, std::move(g));
  EXPECT_EQ(FxGraphDrawer(gm, "node").get_dot_graph().to_string(),
            expected().at("keywords").get<std::string>());
}

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, DrawsAsTorchFxAfterShapeProp) {
  SKIP_WITHOUT_ORACLE();
  const std::string& name = GetParam();
  const json& want = expected().at(name);
  std::shared_ptr<fx::Module> model;
  if (name == "resnet18") model = fx::models::resnet18();
  if (name == "mobilenet_v2") model = fx::models::mobilenet_v2();
  if (name == "vit")
    model = std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  std::vector<fx::Value> in;
  for (const auto& shape : want["input_shapes"])
    in.emplace_back(torch::randn(shape.get<std::vector<int64_t>>()));
  ShapeProp(*gm).propagate(in);
  std::string got = FxGraphDrawer(*gm, name).get_dot_graph().to_string();
  std::string fx_dot = want["dot"];
  EXPECT_EQ(got, fx_dot);
  // On a mismatch, show the first differing line rather than two huge texts.
  if (got != fx_dot) {
    std::istringstream a(got), b(fx_dot);
    std::string la, lb;
    while (std::getline(a, la) && std::getline(b, lb))
      if (la != lb) {
        ADD_FAILURE() << "first difference:\n  fxcpp: " << la << "\n  torch.fx: " << lb;
        break;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Corpus, ::testing::Values("resnet18", "mobilenet_v2", "vit"));

bool have_dot() { return std::system("dot -V >/dev/null 2>&1") == 0; }

TEST(DotGraph, RendersSvgAndPngWithGraphviz) {
  if (!have_dot()) GTEST_SKIP() << "Graphviz's dot is not installed";
  Small m;
  auto gm = fx::symbolic_trace(m);
  ShapeProp(*gm).propagate({torch::randn({2, 3, 5, 5}), torch::randn({2, 2})});
  FxGraphDrawer drawer(*gm, "small");
  const auto& dot = drawer.get_dot_graph();
  std::string svg = dot.create_svg();
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  for (const char* name :
       {"%conv", "%bn", "%relu", "%mean", "%lin", "%add", "%cat", "conv.weight", "(2, 4, 3, 3)"})
    EXPECT_NE(svg.find(name), std::string::npos) << name;
  std::string png = dot.create_png();
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  auto path = std::filesystem::temp_directory_path() / "fxcpp_graph_drawer_test.svg";
  dot.write(path.string(), "svg");
  EXPECT_GT(std::filesystem::file_size(path), 100u);
  std::filesystem::remove(path);
}

TEST(DotGraph, GraphvizErrorsAreFxErrors) {
  fx::passes::DotGraph bad("bad", "digraph bad { a -> ; }\n");
  if (have_dot()) {
    std::string e = error_of([&] { bad.create_svg(); });
    EXPECT_TRUE(e.starts_with("DotGraph::create: 'dot -Tsvg' on graph 'bad' exited with status 1: ")) << e;
    EXPECT_NE(e.find("syntax error"), std::string::npos) << e;
  }
  std::string e = error_of([&] { bad.create("svg", "fxcpp-no-such-graphviz-program"); });
  EXPECT_EQ(
      e,
      "DotGraph::create: cannot run 'fxcpp-no-such-graphviz-program' (No such file or directory); install "
      "Graphviz (e.g. apt-get install graphviz) or pass the path of its dot program");
  EXPECT_EQ(error_of([&] { bad.create("svg -o /tmp/x"); }),
            "DotGraph::create: 'svg -o /tmp/x' is not a Graphviz output format (svg, png, pdf...)");
}

// A called GraphModule gets a graph of its own, "<name>_<target>".
TEST(FxGraphDrawer, DrawsCalledGraphModules) {
  Small m;
  auto inner = fx::symbolic_trace(m);
  std::shared_ptr<fx::GraphModule> sub(inner.release());
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* y = g->placeholder("y");
  g->output(g->call_module("sub", {x, y}));
  fx::GraphModule outer({{"sub", fx::GraphModule::Attr(sub)}}, std::move(g));
  FxGraphDrawer drawer(outer, "outer");
  ASSERT_EQ(drawer.get_all_dot_graphs().size(), 2u);
  EXPECT_EQ(drawer.get_all_dot_graphs()[1].first, "outer_sub");
  EXPECT_EQ(drawer.get_dot_graph("sub").to_string(),
            FxGraphDrawer(*sub, "outer_sub").get_dot_graph().to_string());
  // The submodule is drawn as a graph, not as a record of parameters.
  EXPECT_EQ(drawer.get_dot_graph().to_string().find("conv.weight"), std::string::npos);
  EXPECT_EQ(error_of([&] { drawer.get_dot_graph("nope"); }),
            "FxGraphDrawer: no graph for submodule 'nope': only call_module targets that are GraphModules, "
            "and cond and while_loop branches, have one");
}

// A captured cond and while_loop: each branch is drawn too (torch.fx 2.14
// draws called submodules only), named by its path, after the main graph.
TEST(FxGraphDrawer, CondAndWhileLoopBranchesAreDrawn) {
  auto gm = fx::capture(fx::models::cond_and_while_loop, {torch::randn({3, 4})});
  FxGraphDrawer drawer(*gm, "f");
  std::vector<std::string> names;
  for (const auto& [name, dot] : drawer.get_all_dot_graphs()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"f", "f_true_graph_0", "f_false_graph_0",
                                             "f_while_loop_cond_graph_0", "f_while_loop_body_graph_0"}));
  const std::string true_branch = drawer.get_dot_graph("true_graph_0").to_string();
  EXPECT_NE(true_branch.find("torch.ops.aten.sin.default"), std::string::npos) << true_branch;
  EXPECT_EQ(true_branch,
            FxGraphDrawer(dynamic_cast<const fx::GraphModule&>(*gm->get_submodule("true_graph_0")),
                          "f_true_graph_0")
                .get_dot_graph()
                .to_string());
}

// FX's colour of a call_function/call_method is picked by the MD5 of its
// target: the hash must be MD5 exactly (checked on targets whose colours the
// oracle tests show, and on a long name spanning several MD5 blocks).
TEST(FxGraphDrawer, ColoursFollowTheTargetsMd5) {
  const std::string target = "mylib." + std::string(200, 'a');
  fx::register_function(target, fx::make_callable(target, [](std::vector<c10::IValue>& args,
                                                             fx::IValueKwargs&) { return args[0]; }));
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* n = g->call_function(target, {x});
  g->output(n);
  fx::GraphModule gm(std::map<std::string, fx::GraphModule::Attr>{}, std::move(g));
  // hashlib.md5(("mylib." + "a" * 200).encode()).hexdigest()[:8] == "269635ea"; 0x269635ea % 16 == 10:
  // PaleTurquoise2.
  std::string dot = FxGraphDrawer(gm, "g").get_dot_graph().to_string();
  EXPECT_NE(dot.find("shape=record, fillcolor=PaleTurquoise2, "), std::string::npos) << dot;
}

TEST(FxGraphDrawer, AMissingModuleIsNamed) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  g->output(g->call_module("lin", {x}));
  auto lin = std::make_shared<fx::nn::Linear>(2, 2);
  fx::GraphModule gm({{"lin", fx::GraphModule::Attr(lin)}}, std::move(g));
  gm.graph().find_nodes(fx::Op::call_module, "lin")[0]->set_target("gone");
  EXPECT_EQ(error_of([&] { FxGraphDrawer(gm, "g"); }),
            "FxGraphDrawer: node 'lin' calls module 'gone', which the GraphModule does not have; add it "
            "(add_submodule) or fix the target");
}

}  // namespace
