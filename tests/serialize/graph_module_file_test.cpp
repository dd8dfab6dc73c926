// fx::save / fx::load: round trips of GraphModules through files, and the
// errors a malformed file gives.
#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/models/cond_and_while_loop.h>
#include <fx/passes/shape_prop.h>
#include <fx/state_dict.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using fx::kw;
using fx::Value;
using testing::HasSubstr;

// A parameter, a buffer, a tensor attribute, a tensor constant, kwargs with a
// dtype, getitem with slices and Ellipsis, a tuple output.
struct Functional : fx::Module {
  at::Tensor w, scale, offset;
  Functional() : fx::Module("Functional", {"x", {"alpha", Value(0.5)}}) {
    w = register_parameter("w", torch::randn({4, 4}));
    scale = register_buffer("scale", torch::rand({4}) + 0.5);
    offset = register_attribute("offset", torch::randn({4}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0];
    Value h = fx::call("torch.matmul", x, w) * scale + offset;
    h = h + torch::full({4}, 2.0);  // a tensor constant: _tensor_constant0
    Value s = fx::call("torch.sum", h, kw("dim", -1), kw("dtype", c10::ScalarType::Double));
    Value t = h[Value::tuple({Value(fx::Ellipsis), Value::slice(1, fx::None, 2)})];
    return Value::tuple({fx::call("torch.relu", t) * in[1], s, h.clamp(kw("min", -1.0), kw("max", 1.0))});
  }
};

std::unique_ptr<fx::GraphModule> traced() {
  torch::manual_seed(0);
  Functional m;
  return fx::symbolic_trace(m);
}

std::vector<c10::IValue> inputs() { return {torch::randn({3, 4}), 2.0}; }

void expect_same_outputs(fx::GraphModule& a, fx::GraphModule& b) {
  auto in = inputs();
  c10::IValue x = a.run(in), y = b.run(in);
  ASSERT_TRUE(x.isTuple() && y.isTuple());
  auto xs = x.toTupleRef().elements(), ys = y.toTupleRef().elements();
  ASSERT_EQ(xs.size(), ys.size());
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_TRUE(xs[i].toTensor().equal(ys[i].toTensor())) << "output " << i;
}

TEST(GraphModuleFile, RoundTripKeepsGraphCodeTensorsAndOutputs) {
  auto gm = traced();
  gm->eval();
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  EXPECT_EQ(loaded->graph().to_string(), gm->graph().to_string());
  EXPECT_EQ(loaded->code(), gm->code());
  EXPECT_EQ(loaded->to_string(), gm->to_string());
  EXPECT_EQ(loaded->type_name(), "Functional");
  EXPECT_FALSE(loaded->is_training());
  for (const char* path : {"w", "scale", "offset", "_tensor_constant0"})
    EXPECT_TRUE(loaded->get_tensor(path).equal(gm->get_tensor(path))) << path;
  EXPECT_EQ(loaded->named_parameters().size(), 1u);
  EXPECT_TRUE(loaded->named_parameters()[0].value().requires_grad());
  expect_same_outputs(*gm, *loaded);
}

TEST(GraphModuleFile, RoundTripKeepsTensorMeta) {
  auto gm = traced();
  auto in = inputs();
  fx::passes::ShapeProp(*gm).propagate({Value(in[0]), Value(in[1])});
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  auto a = gm->graph().nodes().begin(), b = loaded->graph().nodes().begin();
  size_t with_meta = 0;
  for (; a != gm->graph().nodes().end(); ++a, ++b) {
    std::vector<std::string> ma, mb;
    fx::passes::for_each_tensor_meta(**a,
                                     [&](const fx::passes::TensorMetadata& m) { ma.push_back(m.repr()); });
    fx::passes::for_each_tensor_meta(**b,
                                     [&](const fx::passes::TensorMetadata& m) { mb.push_back(m.repr()); });
    EXPECT_EQ(ma, mb) << (*a)->name();
    with_meta += !ma.empty();
  }
  EXPECT_GE(with_meta, 10u);
}

TEST(GraphModuleFile, SavesToAPathAndLoadsFromIt) {
  auto gm = traced();
  const std::string path = testing::TempDir() + "/functional.fxg";
  fx::save(*gm, path);
  auto loaded = fx::load(path);
  EXPECT_EQ(loaded->code(), gm->code());
  // Its tensors are a state dict torch.load reads.
  EXPECT_EQ(fx::read_state_dict(path).size(), 4u);
}

// ---- malformed files ---------------------------------------------------------

using Json = nlohmann::ordered_json;

// The file of traced(), with graph.json edited by `edit`.
std::string edited(const std::function<void(Json&)>& edit) {
  std::string bytes = fx::save_to_bytes(*traced());
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  auto [data, size] = reader.getRecord("graph.json");
  Json j = Json::parse(static_cast<const char*>(data.get()), static_cast<const char*>(data.get()) + size);
  edit(j);
  std::string text = j.dump();
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  for (const auto& r : reader.getAllRecords()) {
    if (r == "version" || r == "graph.json") continue;
    auto [d, s] = reader.getRecord(r);
    writer.writeRecord(r, d.get(), s);
  }
  writer.writeRecord("graph.json", text.data(), text.size());
  writer.writeEndOfFile();
  return out;
}

std::string load_error(const std::string& bytes) {
  try {
    fx::load_from_bytes(bytes, "bad.fxg");
  } catch (const fx::LoadError& e) {
    return e.what();
  }
  return "(loaded)";
}

Json& node(Json& j, const std::string& name) {
  for (Json& n : j["graph"]["nodes"])
    if (n["name"] == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(GraphModuleFile, RejectsWhatIsNotAGraphModuleFile) {
  EXPECT_THAT(load_error("hello"), HasSubstr("bad.fxg: not a GraphModule file"));
  const std::string good = fx::save_to_bytes(*traced());
  for (size_t cut : {good.size() / 2, good.size() - 10, size_t{30}})
    EXPECT_THAT(load_error(good.substr(0, cut)), HasSubstr("bad.fxg")) << "truncated at " << cut;
  // A state dict alone.
  std::vector<char> sd = torch::pickle_save(c10::Dict<std::string, at::Tensor>());
  EXPECT_THAT(load_error(std::string(sd.begin(), sd.end())), HasSubstr("no such record"));
  EXPECT_THROW(fx::load("/nonexistent/x.fxg"), fx::LoadError);
}

TEST(GraphModuleFile, RejectsMalformedJsonNamingThePosition) {
  EXPECT_THAT(load_error(edited([](Json& j) { j["format"] = "other"; })), HasSubstr("format: expected"));
  EXPECT_THAT(load_error(edited([](Json& j) { j["version"] = 99; })), HasSubstr("update fxcpp"));
  EXPECT_THAT(load_error(edited([](Json& j) { j.erase("graph"); })), HasSubstr("missing \"graph\""));
  EXPECT_THAT(load_error(edited([](Json& j) { node(j, "matmul")["op"] = "call_everything"; })),
              HasSubstr("graph.nodes[3] ('matmul').op"));
  EXPECT_THAT(
      load_error(edited([](Json& j) {
        node(j, "matmul")["args"][0] = Json{{"node", "relu"}};
      })),
      HasSubstr("graph.nodes[3] ('matmul').args[0]: refers to node 'relu', which is not defined before"));
  EXPECT_THAT(load_error(edited([](Json& j) {
                node(j, "matmul")["args"][0] = Json{{"set", 1}};
              })),
              HasSubstr("unknown argument kind \"set\""));
  EXPECT_THAT(load_error(edited([](Json& j) { node(j, "matmul")["name"] = "x"; })),
              HasSubstr("a second node named 'x'"));
  EXPECT_THAT(load_error(edited([](Json& j) {
                node(j, "sum_1")["kwargs"]["dtype"] = Json{{"dtype", "torch.f64"}};
              })),
              HasSubstr("unknown dtype 'torch.f64'"));
  EXPECT_THAT(load_error(edited([](Json& j) { node(j, "matmul")["target"] = "torch.no_such_function"; })),
              HasSubstr("torch.no_such_function"));
  EXPECT_THAT(load_error(edited([](Json& j) { node(j, "w")["target"] = "missing"; })), HasSubstr("missing"));
  EXPECT_THAT(load_error(edited([](Json& j) {
                auto& nodes = j["graph"]["nodes"];
                nodes.erase(nodes.size() - 1);
              })),
              HasSubstr("no output node"));
}

TEST(GraphModuleFile, RejectsTensorsThatDoNotMatchTheirDeclaration) {
  EXPECT_THAT(
      load_error(edited([](Json& j) {
        j["tensors"][0]["shape"] = Json::array({4, 5});
      })),
      HasSubstr(
          "tensors[0] ('w'): declared torch.float32[4, 5] but the stored tensor is torch.float32[4, 4]"));
  EXPECT_THAT(load_error(edited([](Json& j) { j["tensors"].erase(1); })),
              HasSubstr("the stored tensor 'scale' is not declared"));
  EXPECT_THAT(load_error(edited([](Json& j) { j["tensors"][0]["path"] = "v"; })),
              HasSubstr("tensors[0] ('v'): declared in graph.json but missing"));
  EXPECT_THAT(load_error(edited([](Json& j) { j["tensors"][0]["kind"] = "ghost"; })), HasSubstr("ghost"));
}

TEST(GraphModuleFile, SaveNamesWhatHasNoFileForm) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* x = g->placeholder("x");
  fx::Node* y =
      g->call_function("operator.add", {x, fx::make_opaque(c10::IValue(torch::ones({1})), "<object>")});
  g->output(y);
  std::map<std::string, fx::GraphModule::Attr> root;
  try {
    fx::GraphModule gm(root, std::move(g));
    fx::save_to_bytes(gm);
    FAIL() << "saved";
  } catch (const fx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'add' args[1]: the constant <object> has no representation"));
  }
}

// A captured cond and while_loop: their branches are GraphModules below the
// root, saved with their graphs and loaded as GraphModules again.
std::unique_ptr<fx::GraphModule> captured_control_flow() {
  return fx::capture(fx::models::cond_and_while_loop, {torch::randn({3, 4})});
}

TEST(GraphModuleFile, BranchesOfCondAndWhileLoopRoundTrip) {
  auto gm = captured_control_flow();
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  EXPECT_EQ(loaded->graph().to_string(), gm->graph().to_string());
  EXPECT_EQ(loaded->code(), gm->code());
  size_t branches = 0;
  for (const char* path :
       {"true_graph_0", "false_graph_0", "while_loop_cond_graph_0", "while_loop_body_graph_0"}) {
    auto* want = dynamic_cast<fx::GraphModule*>(gm->get_submodule(path));
    auto* got = dynamic_cast<fx::GraphModule*>(loaded->get_submodule(path));
    ASSERT_NE(want, nullptr) << path;
    ASSERT_NE(got, nullptr) << path;
    EXPECT_EQ(got->graph().to_string(), want->graph().to_string()) << path;
    EXPECT_EQ(got->code(), want->code()) << path;
    EXPECT_EQ(got->type_name(), want->type_name()) << path;
    ++branches;
  }
  EXPECT_EQ(branches, 4u);
  for (double sign : {1.0, -1.0}) {
    at::Tensor x = torch::rand({3, 4}) * sign;  // either branch
    EXPECT_TRUE(loaded->run({x}).toTensor().allclose(gm->run({x}).toTensor())) << sign;
  }
}

TEST(GraphModuleFile, ABranchWithoutAGraphIsRefusedByPath) {
  auto gm = captured_control_flow();
  const std::string bytes = fx::save_to_bytes(*gm);
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    const std::string path = testing::TempDir() + "control_flow.fxg";
    std::ofstream(path, std::ios::binary) << bytes;
    auto archive = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    auto [data, size] = archive->getRecord("graph.json");
    auto top = nlohmann::json::parse(static_cast<const char*>(data.get()),
                                     static_cast<const char*>(data.get()) + size);
    edit(top);
    std::string out;
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
      out.append(static_cast<const char*>(p), n);
      return n;
    });
    for (const std::string& name : archive->getAllRecords()) {
      if (name == "graph.json" || name == "version" || name == ".data/version" ||
          name == ".data/serialization_id")
        continue;
      auto [d, n] = archive->getRecord(name);
      writer.writeRecord(name, d.get(), n);
    }
    const std::string json = top.dump();
    writer.writeRecord("graph.json", json.data(), json.size());
    writer.writeEndOfFile();
    return out;
  };
  auto error = [](const std::string& file) -> std::string {
    try {
      fx::load_from_bytes(file);
    } catch (const fx::LoadError& e) {
      return e.what();
    }
    return "(loaded)";
  };
  auto branch = [](nlohmann::json& top) -> nlohmann::json& {
    for (auto& m : top["modules"])
      if (m["path"] == "false_graph_0") return m;
    throw std::runtime_error("no false_graph_0");
  };
  EXPECT_THAT(error(edited([&](nlohmann::json& top) { branch(top).erase("graph"); })),
              HasSubstr("modules[1] ('false_graph_0'): missing \"graph\""));
  EXPECT_THAT(
      error(edited([&](nlohmann::json& top) { branch(top)["graph"]["nodes"][1]["op"] = "call_nothing"; })),
      HasSubstr("modules[1] ('false_graph_0'): graph.nodes[1]"));
  EXPECT_THAT(error(edited([&](nlohmann::json& top) { branch(top)["kwargs"]["x"] = 1; })),
              HasSubstr("torch.fx.GraphModule takes no constructor arguments"));
}

// A torch.save archive whose data.pkl is `pickle` (protocol 2, no tensors).
std::string archive_of_pickle(const std::string& pickle) {
  const std::string path = testing::TempDir() + "pickle_" + std::to_string(pickle.size()) + ".pt";
  caffe2::serialize::PyTorchStreamWriter writer(path);
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  return path;
}

std::string read_error(const std::string& pickle) {
  try {
    fx::read_state_dict(archive_of_pickle(pickle));
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "(read)";
}

// A pickle can make an object graph with cycles or of any depth. Neither may
// leak (LeakSanitizer checks this test) nor overflow the stack when freed.
TEST(TorchLoad, CyclesAndDeepNestingAreFreedAndRefused) {
  // pickle.dumps({'w': l}, protocol=2) where l = []; l.append(l)
  const char kCycle[] =
      "\x80\x02}q\x00X\x01\x00\x00\x00wq\x01]q\x02h\x02"
      "as.";
  const std::string cycle(kCycle, sizeof kCycle - 1);
  EXPECT_THAT(read_error(cycle), HasSubstr("maps a str to a list ('w')"));
  // [[[...]]], a million deep: MARK * n, EMPTY_LIST, LIST * n.
  const size_t depth = 1'000'000;
  const std::string deep = "\x80\x02" + std::string(depth, '(') + "]" + std::string(depth, 'l') + ".";
  EXPECT_THAT(read_error(deep), HasSubstr("holds a list, not a state dict"));
}

}  // namespace
