#pragma once
// The C++ twins of models.py that several tracing tests use, and the JSON of
// torch.fx's answers that oracle.py writes (FXCPP_TRACE_EXPECTED).
#include <fx/fx.h>
#include <fx/nn.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace fxcpp_test {

using fx::Value;

template <class M, class... A>
std::shared_ptr<M> make(A&&... a) {
  return std::make_shared<M>(std::forward<A>(a)...);
}

// torch.fx's answers, or null when the oracle did not run.
inline const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(FXCPP_TRACE_EXPECTED);
    return in ? nlohmann::json::parse(in) : nlohmann::json();
  }();
  return j;
}

// models.py: SimpleNet
struct SimpleNet : fx::Module {
  std::shared_ptr<fx::nn::Linear> linear1, linear2;
  SimpleNet() : fx::Module("SimpleNet") {
    linear1 = register_module("linear1", make<fx::nn::Linear>(10, 20));
    linear2 = register_module("linear2", make<fx::nn::Linear>(20, 10));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = fx::call("torch.relu", (*linear1)(in[0]));
    return fx::call("torch.relu", (*linear2)(x));
  }
};

// models.py: BasicBlock, ResNet's: leaf modules and a traced-through Sequential.
struct BasicBlock : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> conv1, conv2;
  std::shared_ptr<fx::nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<fx::nn::ReLU> relu;
  std::shared_ptr<fx::nn::Sequential> downsample;
  static std::shared_ptr<fx::nn::Conv2d> conv(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p) {
    return make<fx::nn::Conv2d>(in, out, std::vector<int64_t>{k, k}, std::vector<int64_t>{s, s},
                                std::vector<int64_t>{p, p}, std::vector<int64_t>{1, 1}, 1, false);
  }
  BasicBlock() : fx::Module("BasicBlock") {
    conv1 = register_module("conv1", conv(4, 8, 3, 2, 1));
    bn1 = register_module("bn1", make<fx::nn::BatchNorm2d>(8));
    relu = register_module("relu", make<fx::nn::ReLU>(true));
    conv2 = register_module("conv2", conv(8, 8, 3, 1, 1));
    bn2 = register_module("bn2", make<fx::nn::BatchNorm2d>(8));
    downsample =
        register_module("downsample", make<fx::nn::Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                          conv(4, 8, 1, 2, 0), make<fx::nn::BatchNorm2d>(8)}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value out = (*relu)((*bn1)((*conv1)(in[0])));
    out = (*bn2)((*conv2)(out));
    out += (*downsample)(in[0]);
    return (*relu)(out);
  }
};

// models.py: Attributes: a parameter, a buffer and a plain tensor attribute.
struct Attributes : fx::Module {
  at::Tensor w, scale, offset;
  Attributes() : fx::Module("Attributes") {
    w = register_parameter("w", torch::rand({3}));
    scale = register_buffer("scale", torch::ones({3}));
    offset = register_attribute("offset", torch::zeros({3}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value y = in[0] * w + w;
    y = y * scale - scale;
    return y + offset;
  }
};

// Computations on parameters alone are recorded, not run at trace time.
struct ParameterMath : fx::Module {
  at::Tensor logit_scale, proj, offset;
  ParameterMath() : fx::Module("ParameterMath") {
    logit_scale = register_parameter("logit_scale", torch::tensor(2.0));
    proj = register_parameter("proj", torch::randn({4, 4}));
    offset = register_buffer("offset", torch::ones({4}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value scale = Value(logit_scale).exp();
    Value w = Value(proj).t() * 2;
    return fx::call_function("operator.matmul", {in[0], w}) * scale + offset;
  }
};

// Tensor constants named around the names already taken.
struct Constants : fx::Module {
  std::vector<at::Tensor> c;  // not attributes: each is a `_tensor_constantN`
  at::Tensor buffer, attribute;
  Constants() : fx::Module("Constants") {
    buffer = register_buffer("_tensor_constant1", torch::ones({2}));
    attribute = register_attribute("_tensor_constant3", torch::full({2}, 3.0));
    for (int i = 0; i < 4; ++i) c.push_back(torch::full({2}, static_cast<double>(i)));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0];
    for (const auto& t : c) x = x + t;
    x = x * c[0];  // the same tensor again: the same name
    return x + buffer + attribute;
  }
};

// A custom leaf policy: trace into Linear, the default policy otherwise.
struct LinearNotLeaf : fx::Tracer {
  bool is_leaf_module(const fx::Module& m, std::string_view name) const override {
    return !dynamic_cast<const fx::nn::Linear*>(&m) && fx::Tracer::is_leaf_module(m, name);
  }
};

}  // namespace fxcpp_test
