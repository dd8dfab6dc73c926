// The example of the README (kept identical to it).
#include <fx/fx.h>
#include <iostream>

// class MyModel(nn.Module):
//     def forward(self, x):
//         return self.linear(x + self.param).clamp(min=0.0, max=1.0)
struct MyModel : fx::Module {
  at::Tensor param;
  std::shared_ptr<fx::nn::Linear> linear;
  MyModel() : fx::Module("MyModel", {"x"}) {
    param = register_parameter("param", torch::rand({3, 4}));
    linear = register_module("linear", std::make_shared<fx::nn::Linear>(4, 5));
  }
  fx::Value forward(const std::vector<fx::Value>& in) override {
    return (*linear)(in[0] + param).clamp(fx::kw("min", 0.0), fx::kw("max", 1.0));
  }
};

int main() {
  MyModel model;
  auto traced = fx::symbolic_trace(model);
  std::cout << traced->graph() << "\n" << traced->code();
  at::Tensor y = (*traced)(torch::randn({3, 4})).tensor();  // runs on LibTorch
}
