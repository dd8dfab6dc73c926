// GraphModule files between torch.fx 2.14 and fxcpp. interop.py export wrote
// torch.fx's files (DATA/py): fxcpp loads them, prints the same graph and code,
// and gives the same outputs. This test writes fxcpp's (DATA/cpp), which
// interop.py check reads back into torch.fx.
#include <fx/capture.h>
#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/models/cond_and_while_loop.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/passes/shape_prop.h>
#include <fx/state_dict.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using fx::Value;

const std::string kData = FXCPP_INTEROP_DATA;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The tensors of nested tuples and lists, in order.
void flat_into(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flat_into(e, out);
  } else {
    for (const auto& e : v.toListRef()) flat_into(e, out);
  }
}
std::vector<at::Tensor> flat(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  flat_into(v, out);
  return out;
}

class FromTorchFx : public testing::TestWithParam<std::string> {};

TEST_P(FromTorchFx, LoadsWithTheSameTextAndOutputs) {
  const std::string base = kData + "/py/" + GetParam();
  if (!fs::exists(base + ".fxg")) GTEST_SKIP() << "interop.py export did not run";
  auto gm = fx::load(base + ".fxg");
  auto expected = read_json(base + ".json");
  EXPECT_EQ(gm->graph().to_string(), expected["graph"].get<std::string>());
  EXPECT_EQ(gm->code(), expected["code"].get<std::string>());
  // GraphModules below the root (cond's branches) print as torch.fx's did.
  const nlohmann::json submodules = expected.value("submodules", nlohmann::json::object());
  for (auto it = submodules.begin(); it != submodules.end(); ++it) {
    auto* sub = dynamic_cast<fx::GraphModule*>(gm->get_submodule(it.key()));
    ASSERT_NE(sub, nullptr) << it.key() << " is not a GraphModule";
    EXPECT_EQ(sub->graph().to_string(), it.value()["graph"].get<std::string>()) << it.key();
    EXPECT_EQ(sub->code(), it.value()["code"].get<std::string>()) << it.key();
  }

  std::map<std::string, at::Tensor> io;
  for (auto& [k, t] : fx::read_state_dict(base + ".io.pt")) io[k] = t;
  std::vector<c10::IValue> inputs;
  for (int i = 0; io.count("in." + std::to_string(i)); ++i) {
    const at::Tensor& t = io["in." + std::to_string(i)];
    inputs.push_back(t.dim() == 0 ? c10::IValue(t.item<double>()) : c10::IValue(t));
  }
  torch::NoGradGuard no_grad;
  auto outputs = flat(gm->run(inputs));
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_TRUE(torch::allclose(outputs[i], io.at("out." + std::to_string(i)), 1e-4, 1e-5)) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, FromTorchFx,
                         testing::Values("functional", "resnet18", "mobilenet_v2", "make_fx",
                                         "control_flow"));

// fxcpp's graph text, code, inputs and outputs beside its file, for interop.py check.
void write_for_python(const std::string& name, fx::GraphModule& gm, const std::vector<at::Tensor>& inputs) {
  fs::create_directories(kData + "/cpp");
  const std::string base = kData + "/cpp/" + name;
  fx::save(gm, base + ".fxg");
  nlohmann::json submodules = nlohmann::json::object();
  for (const auto& item : gm.named_modules("", /*include_self=*/false))
    if (const auto* sub = dynamic_cast<const fx::GraphModule*>(item.value().get()))
      submodules[item.key()] = {{"graph", sub->graph().to_string()}, {"code", sub->code()}};
  std::ofstream(base + ".json") << nlohmann::json{
      {"graph", gm.graph().to_string()},
      {"code", gm.code()},
      {"submodules", submodules}}.dump();
  std::vector<c10::IValue> in(inputs.begin(), inputs.end());
  torch::NoGradGuard no_grad;
  auto outputs = flat(gm.run(in));
  c10::Dict<std::string, at::Tensor> io;
  for (size_t i = 0; i < inputs.size(); ++i) io.insert("in." + std::to_string(i), inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) io.insert("out." + std::to_string(i), outputs[i]);
  std::vector<char> bytes = torch::pickle_save(io);
  std::ofstream(base + ".io.pt", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  // And it reads back here.
  auto back = fx::load(base + ".fxg");
  EXPECT_EQ(back->code(), gm.code());
}

TEST(ToTorchFx, WritesFilesForInteropCheck) {
  torch::manual_seed(0);
  at::Tensor image = torch::randn({2, 3, 64, 64});
  auto resnet = fx::models::resnet18();
  resnet->eval();
  auto gm = fx::symbolic_trace(*resnet);
  fx::passes::ShapeProp(*gm).propagate({Value(image)});
  write_for_python("resnet18", *gm, {image});
  auto mobilenet = fx::models::mobilenet_v2();
  mobilenet->eval();
  write_for_python("mobilenet_v2", *fx::symbolic_trace(*mobilenet), {image});

  // An ATen-level training step captured with fx::capture: forward, loss and
  // gradients in one graph.
  resnet->train();
  auto step = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor loss = (*resnet)(Value(in[0])).tensor().sum();
    auto grads = torch::autograd::grad({loss}, resnet->parameters());
    return c10::ivalue::Tuple::create({loss, c10::List<at::Tensor>(grads)});
  };
  fx::CaptureOptions options;
  options.input_names = {"x"};
  auto captured = fx::capture(*resnet, step, {image}, options);
  resnet->eval();  // the same BatchNorm statistics in both runs
  write_for_python("resnet18_training_step_captured", *captured, {image});

  // cond and while_loop, captured: their branches are GraphModules below the root.
  at::Tensor x = torch::randn({3, 4});
  write_for_python("control_flow_captured", *fx::capture(fx::models::cond_and_while_loop, {x}), {x});
}

}  // namespace
