// fx::compile called while autograd is on (grad mode, parameters that
// require grad): the forward and the backward compiled apart, against eager
// LibTorch, step by step.
#include <fx/compile.h>
#include <fx/error.h>
#include "fresh_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <thread>
#include <vector>

namespace {

using testing::HasSubstr;

// A block with pointwise work on both sides of the matrix products, a
// layer norm, and a batch norm whose running statistics the forward updates.
struct Block : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  Block() {
    l1 = register_module("l1", torch::nn::Linear(16, 32));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})));
    bn = register_module("bn", torch::nn::BatchNorm1d(32));
    l2 = register_module("l2", torch::nn::Linear(32, 8));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::gelu(norm(l1(x)));
    h = bn(h) * torch::sigmoid(h) + torch::tanh(h);
    return l2(h);
  }
};

std::pair<std::shared_ptr<Block>, std::shared_ptr<Block>> twin_blocks() {
  torch::manual_seed(0);
  auto a = std::make_shared<Block>(), b = std::make_shared<Block>();
  torch::NoGradGuard no_grad;
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  return {a, b};
}

// Fused kernels sum in another order than eager's: gradients summed over a
// batch differ in their last digits.
void expect_close_tensors(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!want.defined()) return;
  EXPECT_TRUE(at::allclose(got, want, 1e-3, 1e-4))
      << what << ": max difference " << (got - want).abs().max().item<double>();
}

void expect_same_grads(Block& got, Block& want) {
  auto wanted = want.named_parameters();
  for (const auto& p : got.named_parameters())
    expect_close_tensors(p.value().grad(), wanted[p.key()].grad(), p.key());
}

void sgd_step(Block& net) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.parameters())
    if (p.grad().defined()) {
      p.sub_(p.grad() * 0.1);
      p.mutable_grad() = at::Tensor();
    }
}

TEST(CompileAutograd, TrainsAsEagerDoes) {
  auto [net, eager] = twin_blocks();
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return c10::IValue(net->forward(in[0].toTensor())); },
      fresh_options());
  torch::manual_seed(1);
  for (int step = 0; step < 4; ++step) {
    at::Tensor x = torch::randn({12, 16}), target = torch::randn({12, 8});
    at::Tensor xc = x.clone().requires_grad_(), xe = x.clone().requires_grad_();
    at::Tensor y = compiled->run({xc}).toTensor();
    at::Tensor want = eager->forward(xe);
    ASSERT_TRUE(y.requires_grad()) << "step " << step;
    expect_close_tensors(y, want, "output at step " + std::to_string(step));
    (y - target).pow(2).mean().backward();
    (want - target).pow(2).mean().backward();
    expect_same_grads(*net, *eager);
    expect_close_tensors(xc.grad(), xe.grad(), "the input's gradient at step " + std::to_string(step));
    expect_close_tensors(net->bn->running_mean, eager->bn->running_mean, "running_mean");
    expect_close_tensors(net->bn->running_var, eager->bn->running_var, "running_var");
    // The optimizer updates the parameters in place: the compiled program
    // reads the new values.
    sgd_step(*net);
    sgd_step(*eager);
  }
  EXPECT_EQ(compiled->num_specializations(), 1u);
  // Kernels on both sides: the forward's pointwise chain, and its backward.
  EXPECT_GE(compiled->report().kernels, 2u);
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), HasSubstr("fxcpp.compiled."));
  const std::string backward = compiled->compiled_backward_graph().graph().to_string();
  EXPECT_THAT(backward, HasSubstr("placeholder[target=tangents_1]"));
  EXPECT_THAT(backward, HasSubstr("fxcpp.compiled."));
  // Under NoGradGuard the same module compiles its forward alone.
  torch::NoGradGuard no_grad;
  compiled->run({torch::randn({12, 16})});
  try {
    compiled->compiled_backward_graph();
    FAIL() << "a backward graph for a call without autograd";
  } catch (const fx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no backward"));
  }
}

TEST(CompileAutograd, FrozenParametersAndUnusedOutputs) {
  auto [net, eager] = twin_blocks();
  auto twice = [](Block& b, const at::Tensor& x) {
    at::Tensor y = b.forward(x);
    return c10::ivalue::Tuple::create({y, torch::relu(y) * 3.0});
  };
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return c10::IValue(twice(*net, in[0].toTensor())); },
      fresh_options());
  torch::manual_seed(2);
  at::Tensor x = torch::randn({6, 16});
  for (int call = 0; call < 4; ++call) {
    // From the third call on, l1's weight is frozen: another specialization.
    if (call == 2) {
      net->l1->weight.set_requires_grad(false);
      eager->l1->weight.set_requires_grad(false);
    }
    auto got = compiled->run({x}).toTuple();
    auto want = twice(*eager, x);
    // Only the first output reaches the loss: the second's gradient is none.
    got->elements()[0].toTensor().sum().backward();
    want->elements()[0].toTensor().sum().backward();
    expect_close_tensors(got->elements()[1].toTensor(), want->elements()[1].toTensor(), "second output");
    expect_same_grads(*net, *eager);
    sgd_step(*net);
    sgd_step(*eager);
  }
  EXPECT_EQ(compiled->num_specializations(), 2u);
  EXPECT_FALSE(net->l1->weight.grad().defined());
}

TEST(CompileAutograd, SecondDerivativeIsAnError) {
  auto [net, eager] = twin_blocks();
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return c10::IValue(net->forward(in[0].toTensor())); },
      fresh_options());
  at::Tensor x = torch::randn({4, 16}, torch::requires_grad());
  compiled->run({x});  // captures
  at::Tensor loss = compiled->run({x}).toTensor().pow(2).sum();
  try {
    torch::autograd::grad({loss}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    FAIL() << "a second derivative through the compiled backward";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("create_graph=true"));
  }
  // A first derivative still works after it.
  auto g = torch::autograd::grad({loss}, {x});
  at::Tensor xe = x.detach().clone().requires_grad_();
  auto want = torch::autograd::grad({eager->forward(xe).pow(2).sum()}, {xe});
  expect_close_tensors(g[0], want[0], "the input's gradient");
}

// The values the forward saves follow autograd's rules: an in-place change
// to one before the backward is an error, and a second backward needs
// retain_graph on the first.
TEST(CompileAutograd, SavedValuesFollowAutogradsRules) {
  torch::manual_seed(5);
  torch::nn::Linear lin(6, 3);
  auto compiled = fx::compile(
      *lin,
      [&](const std::vector<c10::IValue>& in) { return c10::IValue(torch::tanh(lin(in[0].toTensor()))); },
      fresh_options());
  at::Tensor x = torch::randn({4, 6});
  compiled->run({x});  // compiles
  at::Tensor changed = x.clone();
  at::Tensor y = compiled->run({changed}).toTensor();
  changed.add_(1.0);  // the weight's gradient needs the input as it was
  try {
    y.sum().backward();
    FAIL() << "no error for a saved value changed in place";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("modified by an in-place operation"));
  }

  lin->zero_grad();
  at::Tensor z = compiled->run({x}).toTensor().sum();
  z.backward({}, /*retain_graph=*/true);
  z.backward();
  at::Tensor twice = lin->weight.grad().clone();
  lin->zero_grad();
  torch::tanh(lin(x)).sum().backward();
  expect_close_tensors(twice, lin->weight.grad() * 2, "the weight's gradient of two backwards");
  try {
    z.backward();
    FAIL() << "no error for a third backward after one without retain_graph";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("retain_graph=true"));
  }
}

// Code that writes in place a value its own backward needs as it was (an
// input, or a buffer) fails as eager fails: the joint capture runs
// autograd on it, which raises eager's error. The compiled backward never
// reads the new value instead.
TEST(CompileAutograd, CodeThatWritesWhatItsBackwardNeedsFailsAsEagerDoes) {
  torch::nn::Linear lin(3, 3);
  at::Tensor buffer = lin->register_buffer("scale", torch::ones({3}));
  for (bool input : {true, false}) {
    SCOPED_TRACE(input ? "an input" : "a buffer");
    auto compiled = fx::compile(
        *lin,
        [&](const std::vector<c10::IValue>& in) {
          at::Tensor x = in[0].toTensor();
          at::Tensor read = input ? x : buffer;
          at::Tensor y = lin(x) * read;  // the weight's gradient needs `read` as it was
          read.add_(1.0);
          return c10::IValue(y.sum());
        },
        fresh_options());
    try {
      compiled->run({torch::randn({2, 3})}).toTensor().backward();
      FAIL() << "no error";
    } catch (const std::exception& e) {
      EXPECT_THAT(e.what(), HasSubstr("modified by an inplace operation"));
    }
  }
}

// Convolutions, batch norm and a residual add: the forward keeps the
// layouts the backward was captured for, so the gradients are eager's.
struct ConvNet : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear head{nullptr};
  ConvNet() {
    c1 = register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(8));
    c2 = register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)));
    head = register_module("head", torch::nn::Linear(8, 4));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::relu(bn(c1(x)));
    h = torch::relu(c2(h) + h);
    return head(h.mean({2, 3}));
  }
};

TEST(CompileAutograd, ConvolutionsTrainAsEagerDoes) {
  torch::manual_seed(3);
  auto net = std::make_shared<ConvNet>(), eager = std::make_shared<ConvNet>();
  {
    torch::NoGradGuard no_grad;
    auto pn = net->parameters(), pe = eager->parameters();
    for (size_t i = 0; i < pn.size(); ++i) pe[i].copy_(pn[i]);
  }
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return c10::IValue(net->forward(in[0].toTensor())); },
      fresh_options());
  at::Tensor x = torch::randn({4, 3, 16, 16});
  for (int call = 0; call < 3; ++call) {
    net->zero_grad();
    eager->zero_grad();
    compiled->run({x}).toTensor().pow(2).sum().backward();
    eager->forward(x).pow(2).sum().backward();
    auto wanted = eager->named_parameters();
    for (const auto& p : net->named_parameters())
      expect_close_tensors(p.value().grad(), wanted[p.key()].grad(),
                           p.key() + " at call " + std::to_string(call));
  }
  EXPECT_GE(compiled->report().kernels, 1u);
}

// Threads share one compiled module: each call is its own autograd node,
// and autograd adds the gradients to .grad() one at a time.
TEST(CompileAutograd, ThreadsDifferentiateOneCompiledModule) {
  torch::manual_seed(4);
  torch::nn::Linear l1(16, 32), l2(32, 8);
  auto forward = [&](const at::Tensor& x) {
    at::Tensor h = l1(x);
    return l2(torch::tanh(h) * torch::sigmoid(h) + h);
  };
  at::Tensor x = torch::randn({8, 16});
  torch::nn::Sequential holder(l1, l2);
  forward(x).sum().backward();
  std::vector<at::Tensor> one;
  for (const auto& p : holder->parameters()) one.push_back(p.grad().clone());
  holder->zero_grad();

  auto compiled = fx::compile(
      *holder, [&](const std::vector<c10::IValue>& in) { return c10::IValue(forward(in[0].toTensor())); },
      fresh_options());
  compiled->run({x}).toTensor().sum().backward();  // compiles
  constexpr int kThreads = 4, kCalls = 5;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) compiled->run({x}).toTensor().sum().backward();
    });
  for (auto& t : threads) t.join();
  auto params = holder->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    expect_close_tensors(params[i].grad(), one[i] * (1 + kThreads * kCalls),
                         "parameter " + std::to_string(i));
  EXPECT_EQ(compiled->num_specializations(), 1u);
  EXPECT_GE(compiled->report().kernels, 1u);
}

// A tensor the code holds itself, that requires grad, is no input and no
// parameter of a root: the call runs as written, so that autograd sees it.
TEST(CompileAutograd, AHeldTensorThatRequiresGradRunsAsWritten) {
  at::Tensor w = torch::randn({8}, torch::requires_grad());
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        return c10::IValue(torch::tanh(in[0].toTensor() * w) + 1.0);
      },
      fresh_options());
  for (int call = 0; call < 2; ++call) {
    w.mutable_grad() = at::Tensor();
    at::Tensor x = torch::randn({4, 8});
    at::Tensor y = compiled->run({x}).toTensor();
    ASSERT_TRUE(y.requires_grad()) << "call " << call;
    y.sum().backward();
    expect_close_tensors(w.grad(), ((1 - torch::tanh(x * w.detach()).pow(2)) * x).sum(0), "w's gradient");
  }
}

}  // namespace
