#include "fuzz_inputs.h"

#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/nn.h>
#include <fx/passes/shape_prop.h>
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>

#include <sstream>

namespace fx::fuzz {
namespace {

struct Block : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> conv;
  std::shared_ptr<fx::nn::BatchNorm2d> bn;
  Block() : fx::Module("Block") {
    conv = register_module(
        "conv", std::make_shared<fx::nn::Conv2d>(3, 4, std::vector<int64_t>{3}, std::vector<int64_t>{2},
                                                 std::vector<int64_t>{1}, std::vector<int64_t>{1}, 1, false));
    bn = register_module("bn", std::make_shared<fx::nn::BatchNorm2d>(4));
  }
  Value forward(const std::vector<Value>& in) override { return (*bn)((*conv)(in[0])); }
};

struct Model : fx::Module {
  std::shared_ptr<fx::nn::Sequential> features;
  std::shared_ptr<fx::nn::Linear> fc;
  at::Tensor scale;
  Model() : fx::Module("Model") {
    features = register_module("features",
                               std::make_shared<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                   std::make_shared<Block>(), std::make_shared<fx::nn::ReLU>(true)}));
    fc = register_module("fc", std::make_shared<fx::nn::Linear>(4, 3));
    scale = register_buffer("scale", torch::ones({3}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value h = (*features)(in[0]);
    h = fx::call("torch.flatten", fx::call("torch.nn.functional.adaptive_avg_pool2d", h, 1), 1);
    Value y = (*fc)(h)*scale;
    Value parts = y.chunk(3, fx::kw("dim", -1));
    return Value::tuple({parts[0].clamp(fx::kw("min", 0.0), fx::kw("max", 1.0)), y.sum(-1), y.size(0)});
  }
};

}  // namespace

const ValidFile& valid_file() {
  static const ValidFile file = [] {
    torch::manual_seed(0);
    Model model;
    model.eval();
    auto gm = fx::symbolic_trace(model);
    fx::passes::ShapeProp(*gm).propagate({torch::randn({2, 3, 8, 8})});
    ValidFile f;
    f.bytes = fx::save_to_bytes(*gm);
    f.records = read_records(f.bytes);
    return f;
  }();
  return file;
}

std::string file_from_input(const ValidFile& valid, std::string_view input) {
  if (input.empty()) throw NotAnInput("empty input");
  const auto mode = static_cast<unsigned char>(input[0]) % 3;
  const std::string content(input.substr(1));
  if (mode == kWholeFile) return content;
  const char* replaced = mode == kGraphJson ? "graph.json" : "data.pkl";
  auto records = valid.records;
  for (auto& [name, data] : records)
    if (name == replaced) data = content;
  return write_records(records);
}

Records read_records(const std::string& bytes) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  Records records;
  for (const auto& name : reader.getAllRecords()) {
    if (name == "version") continue;  // the writer adds its own
    auto [data, size] = reader.getRecord(name);
    records.emplace_back(name, std::string(static_cast<const char*>(data.get()), size));
  }
  return records;
}

std::string write_records(const Records& records) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  for (const auto& [name, data] : records) writer.writeRecord(name, data.data(), data.size());
  writer.writeEndOfFile();
  return out;
}

std::string input_for(Mode mode, std::string_view content) {
  std::string input(1, static_cast<char>(mode));
  input += content;
  return input;
}

}  // namespace fx::fuzz
