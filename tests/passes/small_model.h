#pragma once
// passes_models.Small in C++: conv -> bn -> relu -> mean, then a Linear and a
// cat, returned as a tuple. The oracles trace the Python twin.
#include <fx/fx.h>
#include <fx/nn.h>

#include <memory>
#include <vector>

namespace fxcpp_tests {

struct Small : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> conv;
  std::shared_ptr<fx::nn::BatchNorm2d> bn;
  std::shared_ptr<fx::nn::Linear> lin;
  Small() : fx::Module("Small", {"x", "y"}) {
    conv = register_module("conv", std::make_shared<fx::nn::Conv2d>(3, 4, std::vector<int64_t>{3}));
    bn = register_module("bn", std::make_shared<fx::nn::BatchNorm2d>(4));
    lin = register_module("lin", std::make_shared<fx::nn::Linear>(4, 2));
  }
  fx::Value forward(const std::vector<fx::Value>& in) override {
    fx::Value z = fx::call("torch.relu", (*bn)((*conv)(in[0])));
    z = z.mean(fx::Value::tuple({2, 3}));
    return fx::Value::tuple(
        {(*lin)(z) + in[1], fx::call("torch.cat", fx::Value::list({z, z}), fx::kw("dim", 1))});
  }
};

}  // namespace fxcpp_tests
