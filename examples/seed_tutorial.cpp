// The FX tutorial (seed 000), in C++ with fxcpp: every example, in order.
#include <fx/fx.h>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>

using fx::kw;
using fx::Value;

// §3.1 The smallest example.
struct MyModel : fx::Module {
  at::Tensor param;
  std::shared_ptr<fx::nn::Linear> linear;
  MyModel() : fx::Module("MyModel", {"x"}) {
    param = register_parameter("param", torch::rand({3, 4}));
    linear = register_module("linear", std::make_shared<fx::nn::Linear>(4, 5));
  }
  Value forward(const std::vector<Value>& in) override {
    return (*linear)(in[0] + param).clamp(kw("min", 0.0), kw("max", 1.0));
  }
};

// §3.3 Data-dependent control flow cannot be traced.
struct BadModel : fx::Module {
  BadModel() : fx::Module("BadModel", {"x"}) {}
  Value forward(const std::vector<Value>& in) override {
    if (in[0].sum() > 0) return in[0];
    return -in[0];
  }
};

// §6.1 The model of the relu -> gelu transformation.
struct SimpleNet : fx::Module {
  std::shared_ptr<fx::nn::Linear> linear1, linear2;
  SimpleNet() : fx::Module("SimpleNet", {"x"}) {
    linear1 = register_module("linear1", std::make_shared<fx::nn::Linear>(10, 20));
    linear2 = register_module("linear2", std::make_shared<fx::nn::Linear>(20, 10));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = fx::call("torch.relu", (*linear1)(in[0]));
    return fx::call("torch.relu", (*linear2)(x));
  }
};

// A Tracer subclass with its own leaf policy: trace into Linear too.
struct TraceIntoLinear : fx::Tracer {
  bool is_leaf_module(const fx::Module& m, std::string_view name) const override {
    return !dynamic_cast<const fx::nn::Linear*>(&m) && fx::Tracer::is_leaf_module(m, name);
  }
};

int main() {
  torch::manual_seed(0);

  std::cout << "# 3.1 symbolic_trace(MyModel)\n";
  MyModel model;
  auto traced = fx::symbolic_trace(model);
  std::cout << traced->graph() << "\n" << traced->code() << "\n";

  std::cout << "# 4.1 a GraphModule runs like the model\n";
  at::Tensor x = torch::randn({3, 4});
  bool same = torch::allclose((*traced)(x).tensor(), model(x).tensor());
  std::cout << "traced(x) == model(x): " << (same ? "True" : "False") << "\n\n";

  std::cout << "# 5.1 the nodes and their opcodes\n";
  for (fx::Node* n : traced->graph().nodes())
    std::printf("op=%-20s name=%-10s target=%s\n", std::string(fx::op_name(n->op())).c_str(), n->name().c_str(),
                n->target().str().c_str());

  std::cout << "\n# 3.3 BadModel\n";
  BadModel bad;
  try {
    fx::symbolic_trace(bad);
  } catch (const fx::TraceError& e) {
    std::cout << "TraceError: " << e.what() << "\n";
  }

  std::cout << "\n# 6.1 symbolic_trace(SimpleNet)\n";
  SimpleNet net;
  auto gm = fx::symbolic_trace(net);
  std::cout << gm->graph() << "\n";

  std::cout << "\n# 6.2 relu -> gelu\n";
  for (fx::Node* n : gm->graph().nodes())
    if (n->op() == fx::Op::call_function && n->target() == "torch.relu") n->set_target("torch.nn.functional.gelu");
  gm->recompile();
  std::cout << gm->code() << "\n";
  at::Tensor out = (*gm)(torch::randn({5, 10})).tensor();
  std::cout << "output.shape: " << out.sizes() << "\n";

  std::cout << "\n# A custom Tracer: Linear traced through\n";
  TraceIntoLinear tracer;
  std::cout << *tracer.trace(net) << "\n";
  return 0;
}
