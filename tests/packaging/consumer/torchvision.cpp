// fxcpp::torchvision from a consumer: registered, resolved and called.
#include <fx/runtime.h>
#include <fx/torchvision.h>

#include <ATen/ATen.h>

#include <iostream>
#include <string>

int main() {
  fx::torchvision::register_functions();
  const auto fn = fx::resolve_function("torchvision.ops.stochastic_depth.stochastic_depth");
  const at::Tensor x = at::ones({2, 3});
  const at::Tensor y = fn->call({x, 0.5, std::string("row"), false}, {}).toTensor();  // not training: x
  std::cout << fn->describe() << (y.equal(x) ? " returns its input out of training" : " changed its input")
            << "\n";
}
