// fx::compile_training_step against eager LibTorch: the loss and gradients
// of each step, their accumulation into .grad(), the fused backward, and the
// guards on the module's state (training flags, frozen parameters).
#include <fx/compile.h>
#include <fx/error.h>
#include <fx/models/mobilenetv2.h>
#include "fresh_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <thread>

namespace {

using testing::HasSubstr;
using testing::Not;

// Every activation whose backward the compiler lowers, and softmax and
// log_softmax, whose backward it decomposes.
struct Activations : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  Activations() {
    l1 = register_module("l1", torch::nn::Linear(16, 32));
    bn = register_module("bn", torch::nn::BatchNorm1d(32));
    l2 = register_module("l2", torch::nn::Linear(32, 32));
    l3 = register_module("l3", torch::nn::Linear(32, 10));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::gelu(bn(l1(x)));
    h = torch::silu(l2(h)) + torch::sigmoid(h) * torch::tanh(h) + torch::relu(h) + torch::hardtanh(h, 0, 6) +
        torch::leaky_relu(h, 0.1) + torch::gelu(h, "tanh");
    at::Tensor logits = l3(h);
    return torch::log_softmax(logits, -1) + torch::softmax(logits, -1);
  }
};

using Step = std::function<c10::IValue(const std::vector<c10::IValue>&)>;

Step training_step(Activations& net) {
  return [&net](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor loss = torch::nn::functional::nll_loss(net.forward(in[0].toTensor()), in[1].toTensor());
    loss.backward();
    return loss;
  };
}

// Two networks with the same parameters.
std::pair<std::shared_ptr<Activations>, std::shared_ptr<Activations>> twins() {
  torch::manual_seed(0);
  auto a = std::make_shared<Activations>(), b = std::make_shared<Activations>();
  torch::NoGradGuard no_grad;
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  return {a, b};
}

void expect_same_gradients(Activations& got, Activations& want) {
  auto wanted = want.named_parameters();
  for (const auto& p : got.named_parameters()) {
    const at::Tensor& w = wanted[p.key()].grad();
    ASSERT_EQ(p.value().grad().defined(), w.defined()) << p.key();
    if (!w.defined()) continue;
    EXPECT_TRUE(at::allclose(p.value().grad(), w, 1e-4, 1e-6))
        << p.key() << ": max difference " << (p.value().grad() - w).abs().max().item<float>();
  }
}

TEST(CompileTrainingStep, StepsTrainAsEagerDoes) {
  auto [a, b] = twins();
  auto compiled = fx::compile_training_step(*a, training_step(*a), fresh_options());
  Step eager = training_step(*b);
  torch::optim::SGD opt_a(a->parameters(), 0.1), opt_b(b->parameters(), 0.1);
  at::Tensor x = torch::randn({24, 16}), y = torch::randint(0, 10, {24});
  for (int step = 0; step < 3; ++step) {  // the first captures, the next run the compiled step
    opt_a.zero_grad();
    opt_b.zero_grad();
    at::Tensor loss = compiled->run({x, y}).toTensor();
    at::Tensor want = eager({x, y}).toTensor();
    EXPECT_TRUE(at::allclose(loss, want, 1e-5, 1e-6)) << "step " << step;
    if (step > 0) {
      EXPECT_FALSE(loss.requires_grad()) << "computed with no autograd graph";
    }
    expect_same_gradients(*a, *b);
    opt_a.step();
    opt_b.step();
    // Batch norm's running statistics move once per step on both sides.
    EXPECT_TRUE(at::allclose(a->bn->running_mean, b->bn->running_mean, 1e-5, 1e-6)) << "step " << step;
  }
  EXPECT_EQ(compiled->num_specializations(), 1u);
  const fx::CompileReport& report = compiled->report();
  EXPECT_GE(report.kernels, 5u);
  const std::string code = compiled->compiled_graph().code();
  for (const char* fused :
       {"threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
        "hardtanh_backward", "leaky_relu_backward", "_softmax_backward_data", "_log_softmax_backward_data"})
    EXPECT_THAT(code, Not(HasSubstr(std::string("torch.ops.aten.") + fused))) << "fused into a kernel";
  EXPECT_THAT(code, HasSubstr("native_batch_norm_backward"));  // an ATen call
}

// A convolutional network's step: convolution_backward's bias gradient is
// undefined where a convolution has none (ShapeProp of the layout pass takes
// it as None), and the graph's gradient dict runs through the interpreter.
// Dropout is left out: a compiled step draws its masks in the memory order
// of its own layouts, which may differ from eager's (as torch.compile's do).
TEST(CompileTrainingStep, MobileNetTrainsAsEagerDoes) {
  torch::manual_seed(0);
  auto make = [] {
    return std::make_shared<fx::models::MobileNetV2>(10, 0.25, std::vector<std::vector<int64_t>>{}, 8, 0.0);
  };
  auto a = make(), b = make();
  {
    torch::NoGradGuard no_grad;
    auto pa = a->parameters(), pb = b->parameters();
    for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  }
  auto step_of = [](fx::models::MobileNetV2& net) {
    return [&net](const std::vector<c10::IValue>& in) -> c10::IValue {
      at::Tensor logits = net.call({fx::Value(in[0].toTensor())}).tensor();
      at::Tensor loss = torch::nn::functional::cross_entropy(logits, in[1].toTensor());
      loss.backward();
      return loss;
    };
  };
  auto compiled = fx::compile_training_step(*a, step_of(*a), fresh_options());
  auto eager = step_of(*b);
  at::Tensor x = torch::randn({4, 3, 32, 32}), y = torch::randint(0, 10, {4});
  for (int step = 0; step < 2; ++step) {
    a->zero_grad();
    b->zero_grad();
    at::Tensor loss = compiled->run({x, y}).toTensor();
    EXPECT_TRUE(at::allclose(loss, eager({x, y}).toTensor(), 1e-4, 1e-5)) << "step " << step;
    auto wanted = b->named_parameters();
    for (const auto& p : a->named_parameters()) {
      const at::Tensor& w = wanted[p.key()].grad();
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      // Channels-last convolutions sum in another order than eager's:
      // compared as a whole, by norm, with a floor for the gradients that
      // are rounding noise around 0 (a bias before a batch norm).
      const double error = (p.value().grad() - w).norm().item<double>();
      EXPECT_LE(error, 1e-3 * w.norm().item<double>() + 5e-5) << "step " << step << ", " << p.key();
    }
  }
  EXPECT_GE(compiled->report().kernels, 1u);
}

TEST(CompileTrainingStep, GradientsAccumulateAsBackwardDoes) {
  auto [a, b] = twins();
  auto compiled = fx::compile_training_step(*a, training_step(*a), fresh_options());
  Step eager = training_step(*b);
  at::Tensor x = torch::randn({8, 16}), y = torch::randint(0, 10, {8});
  // Without zero_grad: the capturing call, then two compiled ones, each
  // adding to what is there.
  for (int step = 0; step < 3; ++step) {
    compiled->run({x, y});
    eager({x, y});
    expect_same_gradients(*a, *b);
  }
}

TEST(CompileTrainingStep, AFrozenParameterGetsNoGradientAndCompilesAgain) {
  auto [a, b] = twins();
  auto compiled = fx::compile_training_step(*a, training_step(*a), fresh_options());
  Step eager = training_step(*b);
  at::Tensor x = torch::randn({8, 16}), y = torch::randint(0, 10, {8});
  compiled->run({x, y});
  compiled->run({x, y});
  EXPECT_EQ(compiled->num_specializations(), 1u);
  for (Activations* net : {a.get(), b.get()}) {
    net->zero_grad();
    net->l1->weight.set_requires_grad(false);
  }
  for (int step = 0; step < 2; ++step) {  // captures, then runs the compiled step
    a->zero_grad();
    b->zero_grad();
    compiled->run({x, y});
    eager({x, y});
    EXPECT_FALSE(a->l1->weight.grad().defined());
    expect_same_gradients(*a, *b);
  }
  EXPECT_EQ(compiled->num_specializations(), 2u);
}

TEST(CompileTrainingStep, NeedsGradMode) {
  auto [a, b] = twins();
  auto compiled = fx::compile_training_step(*a, training_step(*a), fresh_options());
  torch::NoGradGuard no_grad;
  try {
    compiled->run({torch::randn({8, 16}), torch::randint(0, 10, {8})});
    FAIL() << "expected fx::Error";
  } catch (const fx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("grad mode off"));
  }
}

// Threads running one compiled step add their gradients one call at a
// time: after them, each gradient is the sum of every call's (batch norm's
// running statistics, which concurrent eager steps would race on too, are
// left out).
TEST(CompileTrainingStep, ThreadsAddTheirGradientsOneAtATime) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 10));
  auto step = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor loss = torch::nn::functional::cross_entropy(net->forward(in[0].toTensor()), in[1].toTensor());
    loss.backward();
    return loss;
  };
  at::Tensor x = torch::randn({8, 16}), y = torch::randint(0, 10, {8});
  step({x, y});
  std::vector<at::Tensor> one;
  for (const auto& p : net->parameters()) one.push_back(p.grad().clone());
  net->zero_grad();

  auto compiled = fx::compile_training_step(*net, step, fresh_options());
  compiled->run({x, y});  // compiles
  constexpr int kThreads = 4, kCalls = 5;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) compiled->run({x, y});
    });
  for (auto& t : threads) t.join();
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(at::allclose(params[i].grad(), one[i] * (1 + kThreads * kCalls), 1e-4, 1e-5)) << i;
  EXPECT_EQ(compiled->num_specializations(), 1u);
}

// The compiled graph gives the parameters' gradients only: a step whose
// input requires grad runs eagerly, and the input gets its gradient.
TEST(CompileTrainingStep, AnInputThatRequiresGradRunsTheStepAsItIs) {
  auto [a, b] = twins();
  auto compiled = fx::compile_training_step(*a, training_step(*a), fresh_options());
  at::Tensor x = torch::randn({8, 16}, torch::requires_grad()), y = torch::randint(0, 10, {8});
  compiled->run({x, y});
  EXPECT_TRUE(x.grad().defined());
  EXPECT_EQ(compiled->num_specializations(), 0u);
}

// The backward operators the lowering computes, on values with NaN, +-inf,
// zeros and the thresholds themselves, in float32 and float64: each as
// ATen computes it.
TEST(CompileTrainingStep, BackwardOperatorsComputeAsAten) {
  auto backward = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    const at::Tensor& g = in[0].toTensor();
    const at::Tensor& x = in[1].toTensor();
    const at::Tensor y = in[2].toTensor();  // a forward's result: in (0, 1)
    return c10::ivalue::Tuple::create({
        at::threshold_backward(g, x, 0.0),
        at::hardtanh_backward(g, x, 0.0, 6.0),
        at::leaky_relu_backward(g, x, 0.1, false),
        at::gelu_backward(g, x, "none"),
        at::gelu_backward(g, x, "tanh"),
        at::silu_backward(g, x),
        at::sigmoid_backward(g, y),
        at::tanh_backward(g, y),
        at::_softmax_backward_data(g, y, -1, y.scalar_type()),
        at::_log_softmax_backward_data(g, y, -1, y.scalar_type()),
    });
  };
  for (c10::ScalarType dtype : {at::kFloat, at::kDouble}) {
    torch::NoGradGuard no_grad;
    auto compiled = fx::compile(backward, fresh_options());
    at::Tensor x = (torch::randn({16, 40}) * 4).to(dtype);
    const double inf = std::numeric_limits<double>::infinity();
    x[0][0] = std::numeric_limits<double>::quiet_NaN();
    x[0][1] = inf;
    x[0][2] = -inf;
    x[0][3] = 0.0;
    x[0][4] = 6.0;
    at::Tensor g = torch::randn({16, 40}).to(dtype), y = torch::rand({16, 40}).to(dtype);
    compiled->run({g, x, y});
    const auto got = compiled->run({g, x, y}).toTupleRef().elements();
    const auto want = backward({g, x, y}).toTupleRef().elements();
    // silu_backward is captured as its decomposition (CompositeImplicitAutograd).
    const std::string code = compiled->compiled_graph().code();
    EXPECT_THAT(code, Not(testing::ContainsRegex("torch\\.ops\\.aten\\.[a-z_]*_backward")))
        << "each one fused into a kernel";
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(at::allclose(got[i].toTensor(), want[i].toTensor(), 1e-5, 1e-6, /*equal_nan=*/true))
          << c10::toString(dtype) << ", result " << i << ": max difference "
          << (got[i].toTensor() - want[i].toTensor()).abs().nan_to_num(0).max().item<double>();
  }
}

// A module's training flag decides what its capture records (batch norm's
// batch statistics or running ones): the guard reads each module's.
TEST(CompileTrainingStep, ASubmodulesTrainingFlagIsGuarded) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(8, 8), torch::nn::BatchNorm1d(8), torch::nn::ReLU());
  net->eval();
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({16, 8}) * 3 + 1;
  compiled->run({x});
  EXPECT_TRUE(at::allclose(compiled->run({x}).toTensor(), net->forward(x), 1e-5, 1e-6));
  net[1]->train();  // the batch norm alone: batch statistics from now on
  at::Tensor got = compiled->run({x}).toTensor();
  net[1]->eval();
  at::Tensor running = net->forward(x);
  net[1]->train();
  at::Tensor want = net->forward(x);
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6))
      << "max difference " << (got - want).abs().max().item<float>();
  EXPECT_FALSE(at::allclose(got, running, 1e-3, 1e-3));
  EXPECT_EQ(compiled->num_specializations(), 2u);
}

}  // namespace
