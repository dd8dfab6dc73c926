// ShapeProp against torch.fx 2.14's ShapeProp (shape_prop_oracle.py): on a
// small model and on the torchvision corpus (resnet18, mobilenet_v2, a small
// vit), every node's meta["type"] and meta["tensor_meta"] (shape, dtype,
// requires_grad, stride, memory_format, quantization) print as FX's do; the
// shape-aware table equals tabulate's over FX's metadata; errors name the node.
#include "oracle.h"

#include <fx/fx.h>
#include <fx/graph_module.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/nn.h>
#include <fx/passes/print_tabular.h>
#include <fx/passes/shape_prop.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "small_model.h"

namespace {

using fx::passes::ShapeProp;
using fx::passes::TensorMetadata;
using fx::passes::TensorMetadataTree;
using nlohmann::json;

using passes_test::expected;

using fxcpp_tests::Small;

std::shared_ptr<fx::Module> build(const std::string& name) {
  if (name == "small") return std::make_shared<Small>();
  if (name == "resnet18") return fx::models::resnet18();
  if (name == "mobilenet_v2") return fx::models::mobilenet_v2();
  return std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
}

std::vector<fx::Value> inputs_for(const json& want) {
  std::vector<fx::Value> in;
  for (const auto& shape : want["input_shapes"])
    in.emplace_back(torch::randn(shape.get<std::vector<int64_t>>()));
  return in;
}

// FX's repr of a node's tensor_meta, with the memory format of each tensor
// that is contiguous in several formats replaced by the first of them in
// the order FX's source lists them. (torch.fx 1.13 iterated a set whose
// order varied from run to run; 2.14 asks in that order and picks the first
// itself.) `formats` lists, per tensor of the value, the formats it is
// contiguous in.
std::string expected_repr(const json& meta, const json& formats, size_t& tensor) {
  if (meta.contains("repr")) {
    std::string repr = meta["repr"];
    const json& fs = formats.at(tensor++);
    if (fs.size() > 1) {
      std::string fx_pick = meta["memory_format"];
      EXPECT_NE(std::find(fs.begin(), fs.end(), fx_pick), fs.end()) << repr;
      size_t at = repr.find("memory_format=" + fx_pick);
      EXPECT_NE(at, std::string::npos);
      if (at != std::string::npos) repr.replace(at + 14, fx_pick.size(), fs[0].get<std::string>());
    }
    return repr;
  }
  if (meta.contains("other")) return meta["other"];
  bool is_tuple = meta.contains("tuple");
  const json& items = is_tuple ? meta["tuple"] : meta["list"];
  std::string out = is_tuple ? "(" : "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + expected_repr(items[i], formats, tensor);
  if (is_tuple && items.size() == 1) out += ',';
  return out + (is_tuple ? ")" : "]");
}

std::string our_repr(const fx::Node& n) {
  if (const auto* tm = n.meta().get<TensorMetadata>("tensor_meta")) return tm->repr();
  if (const auto* tree = n.meta().get<TensorMetadataTree>("tensor_meta")) return tree->repr();
  return "<none>";
}

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, RecordsWhatTorchFxRecords) {
  SKIP_WITHOUT_ORACLE();
  const json& want = expected().at(GetParam());
  auto model = build(GetParam());
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  ASSERT_EQ(gm->graph().to_string(), want["graph"].get<std::string>()) << "the C++ and Python models differ";

  torch::manual_seed(0);
  std::vector<fx::Value> in = inputs_for(want);
  ShapeProp(*gm).propagate(in);

  size_t i = 0;
  const json& nodes = want["nodes"];
  for (fx::Node* n : gm->graph().nodes()) {
    ASSERT_LT(i, nodes.size());
    const json& w = nodes[i++];
    ASSERT_EQ(n->name(), w["name"].get<std::string>());
    const std::string* type = n->meta().get<std::string>("type");
    ASSERT_NE(type, nullptr) << n->name();
    EXPECT_EQ(*type, w["type"].get<std::string>()) << n->name();
    if (w["tensor_meta"].is_null()) {
      EXPECT_FALSE(n->meta().contains("tensor_meta")) << n->name() << ": " << our_repr(*n);
      continue;
    }
    size_t tensor = 0;
    EXPECT_EQ(our_repr(*n), expected_repr(w["tensor_meta"], w["formats"], tensor)) << n->name();
  }
  EXPECT_EQ(i, nodes.size());
  EXPECT_EQ(fx::passes::print_tabular(gm->graph()), want["tabular"].get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Models, Corpus, ::testing::Values("small", "resnet18", "mobilenet_v2", "vit"));

// The output of propagate is the module's output (allclose to a plain run).
TEST(ShapeProp, ReturnsTheModulesOutput) {
  auto model = fx::models::resnet18();
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  torch::manual_seed(0);
  at::Tensor x = torch::randn({1, 3, 64, 64});
  at::Tensor got = ShapeProp(*gm).propagate({x}).tensor();
  at::Tensor want = (*gm)(x).tensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6));
}

// _extract_tensor_metadata on tensors made as the oracle makes them.
TEST(TensorMetadata, PrintsAsTorchFx) {
  SKIP_WITHOUT_ORACLE();
  const json& want = expected().at("tensors");
  at::Tensor x = torch::arange(24.0).reshape({2, 3, 2, 2});
  std::vector<std::pair<std::string, at::Tensor>> cases = {
      {"contiguous", x},
      {"channels_last", x.contiguous(at::MemoryFormat::ChannelsLast)},
      {"channels_last_3d", torch::zeros({1, 2, 3, 2, 2}).contiguous(at::MemoryFormat::ChannelsLast3d)},
      {"transposed", x.transpose(0, 1)},
      {"scalar_int", torch::tensor(7)},
      {"requires_grad_double", torch::ones({3}, torch::dtype(torch::kFloat64).requires_grad(true))},
      {"per_tensor", torch::quantize_per_tensor(x, 0.5, 3, torch::kQUInt8)},
      {"per_channel", torch::quantize_per_channel(x, torch::tensor({0.5, 0.25, 0.125}, torch::kFloat64),
                                                  torch::tensor({0, 1, 2}), 1, torch::kQInt8)},
  };
  for (const auto& [name, t] : cases) {
    std::ostringstream printed;
    printed << fx::passes::extract_tensor_metadata(t);
    EXPECT_EQ(printed.str(), want[name].get<std::string>()) << name;
  }
}

// ---- errors ----------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShapeProp, TooManyInputsIsAnError) {
  Small m;
  auto gm = fx::symbolic_trace(m);
  EXPECT_EQ(error_of([&] {
              ShapeProp(*gm).propagate({torch::randn({2, 3, 5, 5}), torch::randn({2, 2}), torch::randn({1})});
            }),
            "ShapeProp.propagate: got 3 inputs, but the graph takes 2 (x, y); pass one example value per "
            "placeholder");
}

TEST(ShapeProp, TooFewInputsNamesThePlaceholder) {
  Small m;
  auto gm = fx::symbolic_trace(m);
  std::string e = error_of([&] { ShapeProp(*gm).propagate({torch::randn({2, 3, 5, 5})}); });
  EXPECT_TRUE(
      e.starts_with("ShapeProp error for: node=%y : [num_users=1] = placeholder[target=y] with meta={}"))
      << e;
  EXPECT_NE(e.find("expected a positional argument for parameter 'y'"), std::string::npos) << e;
}

// A node that fails mid-graph: the error is FX's, naming the node, with the
// cause; the nodes run before it have their metadata.
TEST(ShapeProp, AFailingNodeIsNamed) {
  Small m;
  auto gm = fx::symbolic_trace(m);
  std::string e = error_of([&] {
    ShapeProp(*gm).propagate({torch::randn({2, 3, 5, 5}), torch::randn({2, 3})});
  });
  EXPECT_TRUE(
      e.starts_with("ShapeProp error for: node=%add : [num_users=1] = "
                    "call_function[target=operator.add](args = (%lin, %y), kwargs = {}) with meta={}\n\n"))
      << e;
  EXPECT_NE(e.find("While executing %add"), std::string::npos) << e;
  for (fx::Node* n : gm->graph().nodes()) {
    if (n->name() == "add") break;
    EXPECT_TRUE(n->meta().contains("tensor_meta")) << n->name();
  }
}

}  // namespace
