// fx::compile against eager LibTorch: outputs, what was fused, guards, the
// cache, and the errors.
#include <fx/compile.h>
#include <fx/control_flow.h>
#include <fx/error.h>
#include <fx/fx.h>
#include <fx/models/alexnet.h>
#include <fx/models/batch_norm_statistics.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/passes/shape_prop.h>
#include "fresh_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

namespace {

using testing::HasSubstr;

void expect_close(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6))
      << "max difference " << (got - want).abs().max().item<float>();
}

// What the compiled program computes: a call that compiles returns what
// the code computed eagerly while it was captured, the next one runs the
// program.
c10::IValue run_compiled(fx::CompiledModule& compiled, const std::vector<c10::IValue>& inputs) {
  compiled.run(inputs);
  return compiled.run(inputs);
}

size_t count_kernel_nodes(const fx::GraphModule& gm) {
  size_t n = 0;
  for (fx::Node* node : gm.graph().nodes())
    n += node->op() == fx::Op::call_function && node->target().str().rfind("fxcpp.compiled.", 0) == 0;
  return n;
}

at::Tensor chain(const at::Tensor& x, const at::Tensor& b) {
  return torch::sigmoid(torch::relu(x * b + 1.0)) * x - 0.5;
}

TEST(Compile, PointwiseChainIsOneKernel) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({64, 33}), b = torch::randn({33});  // 33: a partial vector per row
  expect_close(run_compiled(*compiled, {x, b}).toTensor(), chain(x, b));
  EXPECT_EQ(compiled->report().kernels, 1u);
  EXPECT_EQ(compiled->report().fused_nodes, 6u);
  EXPECT_EQ(compiled->report().extern_nodes, 0u);
  EXPECT_EQ(count_kernel_nodes(compiled->compiled_graph()), 1u);
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), HasSubstr("cpp_fused_mul_add_relu_sigmoid"));
}

TEST(Compile, MlpBiasAndActivationFuseAfterTheMatrixProduct) {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(32, 64), torch::nn::GELU(), torch::nn::Linear(64, 16),
                            torch::nn::ReLU());
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *mlp, [&](const std::vector<c10::IValue>& in) { return mlp->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({20, 32});
  expect_close(run_compiled(*compiled, {x}).toTensor(), mlp->forward(x));
  EXPECT_EQ(compiled->report().kernels, 2u);  // bias + gelu, bias + relu
  const std::string text = compiled->compiled_graph().graph().to_string();
  EXPECT_THAT(text, testing::Not(HasSubstr("addmm")));
  // The product without its bias, through MKL's packed GEMM where LibTorch
  // has MKL (pack_weights_test.cpp).
  EXPECT_THAT(text,
              HasSubstr(at::hasMKL() ? "torch.ops.mkl._mkl_linear.default" : "torch.ops.aten.mm.default"));
  // The parameters are read, not frozen: a new weight changes the output.
  mlp->ptr(0)->as<torch::nn::Linear>()->weight.mul_(2);
  expect_close(run_compiled(*compiled, {x}).toTensor(), mlp->forward(x));
}

TEST(Compile, StridedAndBroadcastInputsAreReadThroughTheirStrides) {
  auto fn = [](const at::Tensor& x, const at::Tensor& col) { return torch::tanh(x.t() * col) + x.t().exp(); };
  auto compiled =
      fx::compile([&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor(), in[1].toTensor()); },
                  fresh_options());
  at::Tensor x = torch::randn({19, 12}), col = torch::randn({12, 1});
  expect_close(run_compiled(*compiled, {x, col}).toTensor(), fn(x, col));
  EXPECT_EQ(compiled->report().kernels, 1u);
  // x.t() twice is one transpose after CSE: the kernel reads it once (and
  // then the shape it loops over).
  for (fx::Node* n : compiled->compiled_graph().graph().nodes())
    if (n->target().str().rfind("fxcpp.compiled.", 0) == 0) {
      EXPECT_EQ(n->args().size(), 3u) << n->format_node();
    }
}

TEST(Compile, AnExternReadClosesAKernel) {
  // `a` is read by mm before its second user: the kernel that makes it ends
  // there, and sigmoid(a) + m is a second kernel.
  auto fn = [](const at::Tensor& x, const at::Tensor& w) {
    at::Tensor a = torch::relu(x * 2.0);
    at::Tensor m = torch::mm(a, w);
    return torch::sigmoid(a) + m;
  };
  auto compiled =
      fx::compile([&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor(), in[1].toTensor()); },
                  fresh_options());
  at::Tensor x = torch::randn({16, 16}), w = torch::randn({16, 16});
  expect_close(run_compiled(*compiled, {x, w}).toTensor(), fn(x, w));
  EXPECT_EQ(compiled->report().kernels, 2u);
  EXPECT_EQ(compiled->report().extern_nodes, 1u);
}

// softmax, log_softmax and layer_norm decompose into reductions over the
// last dimension and pointwise operators; each becomes one row kernel, with
// the pointwise work before and after it.
// float64 kernels compute in double, with the scalars as doubles: 0.1 as a
// float would be off by 1e-9, far above the tolerance.
TEST(Compile, Float64ComputesInDouble) {
  auto fn = [](const at::Tensor& x, const at::Tensor& b) {
    return torch::sigmoid(torch::relu(x * b + 0.1)) * x - 1e-3;
  };
  auto compiled =
      fx::compile([&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor(), in[1].toTensor()); },
                  fresh_options());
  at::Tensor x = torch::randn({64, 33}, torch::kDouble), b = torch::randn({33}, torch::kDouble);
  at::Tensor got = run_compiled(*compiled, {x, b}).toTensor(), want = fn(x, b);
  EXPECT_EQ(got.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(got, want, 1e-13, 1e-14)) << (got - want).abs().max().item<double>();
  EXPECT_EQ(compiled->report().kernels, 1u);
  EXPECT_EQ(compiled->report().extern_nodes, 0u);

  auto norms = [](const at::Tensor& x, const at::Tensor& w) {
    return torch::softmax(x, -1) + torch::layer_norm(x, {x.size(-1)}, w, w * 0.5);
  };
  auto compiled_norms = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return norms(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor y = torch::randn({6, 45}, torch::kDouble) * 3, w = torch::randn({45}, torch::kDouble);
  got = run_compiled(*compiled_norms, {y, w}).toTensor(), want = norms(y, w);
  EXPECT_TRUE(at::allclose(got, want, 1e-12, 1e-13)) << (got - want).abs().max().item<double>();
  // softmax, layer_norm and the sum in one row kernel; the weight's w * 0.5
  // (another shape, alone) stays ATen's.
  EXPECT_EQ(compiled_norms->report().kernels, 1u);
  EXPECT_EQ(compiled_norms->report().extern_nodes, 1u)
      << compiled_norms->compiled_graph().graph().to_string();
}

// A kernel computes in one type: where float32 meets float64 (promoted by
// ATen), the mixed operation stays an ATen call, and int64 values are a
// kernel of their own.
TEST(Compile, MixedTypesAreNotFusedTogether) {
  auto fn = [](const at::Tensor& x, const at::Tensor& y, const at::Tensor& i) {
    return std::make_tuple((x.sin() * 2 + 1) + y, (i * 3 + 1).neg());
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b] = fn(in[0].toTensor(), in[1].toTensor(), in[2].toTensor());
        return c10::ivalue::Tuple::create({a, b});
      },
      fresh_options());
  at::Tensor x = torch::randn({8, 20}), y = torch::randn({8, 20}, torch::kDouble);
  at::Tensor i = torch::randint(-50, 50, {8, 20}, torch::kLong);
  auto got = run_compiled(*compiled, {x, y, i}).toTupleRef().elements();
  auto [a, b] = fn(x, y, i);
  EXPECT_EQ(got[0].toTensor().scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(got[0].toTensor(), a, 1e-6, 1e-7));
  EXPECT_TRUE(torch::equal(got[1].toTensor(), b));
  EXPECT_EQ(compiled->report().kernels, 2u);  // sin, mul, add in float32; mul, add, neg in int64
  EXPECT_EQ(compiled->report().fused_nodes, 6u);
}

// int64 kernels compute what is exact on integers (add, sub with alpha,
// mul, neg, abs, relu, maximum, minimum, comparisons, where, masked_fill),
// with integer constants exactly, and wrap around as ATen does. Division
// and the rest stay ATen calls.
TEST(Compile, Int64ComputesInItsOwnKernels) {
  auto fn = [](const at::Tensor& i, const at::Tensor& j, const at::Tensor& m) {
    at::Tensor a = torch::sub(i * 3, j, 2).abs() + (int64_t{1} << 40);
    at::Tensor b = torch::where(i > j, torch::maximum(i, j.neg()), torch::relu(j - 2)).masked_fill(m, -7);
    at::Tensor c = torch::minimum(i, j) * std::numeric_limits<int64_t>::max();  // wraps
    at::Tensor d = (i + 1).div(j.abs() + 1, "floor");                           // an ATen call
    return std::make_tuple(a, b, c, d);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c, d] = fn(in[0].toTensor(), in[1].toTensor(), in[2].toTensor());
        return c10::ivalue::Tuple::create({a, b, c, d});
      },
      fresh_options());
  for (auto shape : std::vector<std::vector<int64_t>>{{4, 13}, {6, 7}}) {
    at::Tensor i = torch::randint(-1000, 1000, shape, torch::kLong) * (int64_t{1} << 30);
    at::Tensor j = torch::randint(-1000, 1000, shape, torch::kLong);
    at::Tensor m = torch::rand({shape[1]}) > 0.5;
    auto got = run_compiled(*compiled, {i, j, m}).toTupleRef().elements();
    auto [a, b, c, d] = fn(i, j, m);
    size_t k = 0;
    for (const at::Tensor& want : {a, b, c, d}) {
      const at::Tensor& have = got[k++].toTensor();
      ASSERT_EQ(have.scalar_type(), at::kLong);
      EXPECT_TRUE(torch::equal(have, want)) << c10::IntArrayRef(shape) << ", output " << k - 1;
    }
    // a, b, c and d's two adds read i or j: one loop (horizontal fusion).
    EXPECT_EQ(compiled->report().kernels, 1u) << c10::IntArrayRef(shape);
  }
}

// int32 kernels compute the same operators, wrapping around at 32 bits as
// ATen does; a number int32 does not hold leaves its node to ATen.
TEST(Compile, Int32ComputesInItsOwnKernels) {
  auto fn = [](const at::Tensor& i, const at::Tensor& j, const at::Tensor& m) {
    at::Tensor a = torch::where(i > j, torch::sub(i * 3, j, 2).abs(), torch::maximum(i, j.neg()));
    at::Tensor b = (a.masked_fill(m, -7) + 2147483647).relu();  // wraps
    return std::make_tuple(a, b, torch::minimum(i, j) - 1);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c] = fn(in[0].toTensor(), in[1].toTensor(), in[2].toTensor());
        return c10::ivalue::Tuple::create({a, b, c});
      },
      fresh_options());
  for (auto shape : std::vector<std::vector<int64_t>>{{4, 13}, {6, 7}}) {
    at::Tensor i = torch::randint(-1000000, 1000000, shape, torch::kInt) * 1000;
    at::Tensor j = torch::randint(-1000, 1000, shape, torch::kInt);
    at::Tensor m = torch::rand({shape[1]}) > 0.5;
    auto got = run_compiled(*compiled, {i, j, m}).toTupleRef().elements();
    auto [a, b, c] = fn(i, j, m);
    size_t k = 0;
    for (const at::Tensor& want : {a, b, c}) {
      const at::Tensor& have = got[k++].toTensor();
      ASSERT_EQ(have.scalar_type(), at::kInt);
      EXPECT_TRUE(torch::equal(have, want)) << c10::IntArrayRef(shape) << ", output " << k - 1;
    }
    EXPECT_EQ(compiled->report().kernels, 1u) << c10::IntArrayRef(shape);
    EXPECT_EQ(compiled->report().extern_nodes, 0u) << c10::IntArrayRef(shape);
  }
  // 2^40 is no int32: that addition stays an ATen call (which wraps it).
  auto big = fx::compile(
      [](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 2 + (int64_t{1} << 40)) - 1; },
      fresh_options());
  at::Tensor i = torch::randint(-1000, 1000, {3, 5}, torch::kInt);
  const at::Tensor want = (i * 2 + (int64_t{1} << 40)) - 1;
  EXPECT_TRUE(torch::equal(run_compiled(*big, {i}).toTensor(), want));
  size_t additions = 0;
  for (fx::Node* node : big->compiled_graph().graph().nodes())
    additions += node->target().str().rfind("torch.ops.aten.add.", 0) == 0;
  EXPECT_EQ(additions, 1u);
}

// Loops over the same space that read a common input are one loop, which
// reads it once. Not when they share no input, loop over other shapes, or
// when the earlier one's value is read outside it before the later one
// ends (the merged loop runs where the later one was).
// bfloat16 and float16 compute in float lanes: loaded converted (a
// transposed and a broadcast input too), rounded once when stored, so the
// result is the float32 program's, rounded; eager rounds after each
// operator, so it is only near that. A comparison, a where and a row
// reduction of half-precision values join the same kernel.
TEST(Compile, HalfPrecisionComputesInFloat) {
  auto fn = [](const at::Tensor& x, const at::Tensor& y, const at::Tensor& b) {
    at::Tensor t = torch::sigmoid((x * 2.0 + y).relu()) * x - b;
    t = torch::where(t > 0.25, t, y * 0.5);
    return t - t.amax(-1, true);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        return fn(in[0].toTensor(), in[1].toTensor(), in[2].toTensor());
      },
      fresh_options());
  for (const auto dtype : {torch::kBFloat16, torch::kHalf})
    for (int64_t n : {37, 5}) {  // static kernels, then dynamic ones
      at::Tensor x = torch::randn({6, n}), y = torch::randn({n, 6}).t(), b = torch::randn({n});
      const at::Tensor xh = x.to(dtype), yh = y.to(dtype), bh = b.to(dtype);
      const at::Tensor got = run_compiled(*compiled, {xh, yh, bh}).toTensor();
      ASSERT_EQ(got.scalar_type(), dtype);
      EXPECT_EQ(compiled->report().kernels, 1u) << dtype;
      EXPECT_EQ(compiled->report().extern_nodes, 0u) << dtype;
      const at::Tensor exact = fn(xh.to(torch::kFloat), yh.to(torch::kFloat), bh.to(torch::kFloat));
      EXPECT_TRUE(at::allclose(got.to(torch::kFloat), exact.to(dtype).to(torch::kFloat), 1e-2, 1e-3))
          << (got.to(torch::kFloat) - exact).abs().max();
      // Eager rounds after each operator: an element near the where's
      // threshold can take the other side there, and move its row's
      // maximum. Rows with such an element are left out of this comparison.
      const at::Tensor xf = xh.to(torch::kFloat), yf = yh.to(torch::kFloat), bf = bh.to(torch::kFloat);
      const at::Tensor near =
          ((torch::sigmoid((xf * 2.0 + yf).relu()) * xf - bf - 0.25).abs() < 0.05).any(-1, true);
      EXPECT_TRUE(at::allclose(got.to(torch::kFloat).masked_fill(near, 0),
                               fn(xh, yh, bh).to(torch::kFloat).masked_fill(near, 0), 5e-2, 5e-2))
          << dtype;
    }
}

TEST(Compile, LoopsThatShareAnInputFuseHorizontally) {
  auto two = [](const at::Tensor& x, const at::Tensor& y) {
    return std::make_tuple(x.sin() * 2.0, x.cos() + 1.0, y.exp() - 1.0, x.sum(-1, true) * 0.5);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c, d] = two(in[0].toTensor(), in[1].toTensor());
        return c10::ivalue::Tuple::create({a, b, c, d});
      },
      fresh_options());
  at::Tensor x = torch::randn({9, 21}), y = torch::randn({9, 21});
  auto got = run_compiled(*compiled, {x, y}).toTupleRef().elements();
  auto [a, b, c, d] = two(x, y);
  expect_close(got[0].toTensor(), a);
  expect_close(got[1].toTensor(), b);
  expect_close(got[2].toTensor(), c);
  expect_close(got[3].toTensor(), d);
  // sin and cos over x: one loop reading x once; exp over y, which shares
  // nothing with it; the row sum is a row kernel.
  EXPECT_EQ(compiled->report().kernels, 3u);
  bool one_read = false;
  for (fx::Node* n : compiled->compiled_graph().graph().nodes())
    one_read = one_read || (n->target().str().find("_sin") != std::string::npos &&
                            n->target().str().find("_cos") != std::string::npos && n->args().size() == 2);
  EXPECT_TRUE(one_read) << compiled->compiled_graph().graph().to_string();

  auto read_between = [](const at::Tensor& x, const at::Tensor& w) {
    at::Tensor m = torch::mm((x * 2.0).relu(), w);
    return x.tanh() * 3.0 + m;
  };
  auto compiled_between = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return read_between(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor s = torch::randn({16, 16}), w = torch::randn({16, 16});
  expect_close(run_compiled(*compiled_between, {s, w}).toTensor(), read_between(s, w));
  EXPECT_EQ(compiled_between->report().kernels, 2u);  // mm reads the first before the second ends
}

TEST(Compile, SoftmaxIsOneRowKernelWithItsPrologueAndEpilogue) {
  auto fn = [](const at::Tensor& x) { return torch::softmax(x * 0.5, -1) + 1.0; };
  auto compiled =
      fx::compile([&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor()); }, fresh_options());
  for (auto sizes : {std::vector<int64_t>{4, 33}, {2, 3, 64}, {1, 1}, {5, 1000}}) {
    at::Tensor x = torch::randn(sizes) * 4;
    expect_close(run_compiled(*compiled, {x}).toTensor(), fn(x));
    EXPECT_EQ(compiled->report().kernels, 1u) << sizes;
    EXPECT_EQ(compiled->report().extern_nodes, 0u) << sizes;
  }
  auto log_softmax = [](const at::Tensor& x) { return torch::log_softmax(x, -1).neg(); };
  auto compiled_log = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return log_softmax(in[0].toTensor()); }, fresh_options());
  at::Tensor x = torch::randn({7, 45});
  expect_close(run_compiled(*compiled_log, {x}).toTensor(), log_softmax(x));
  EXPECT_EQ(compiled_log->report().kernels, 1u);
}

// log_softmax + nll_loss (cross_entropy's forward) in each reduction, with
// ignored labels (ATen's default ignore_index and another one), with and
// without class weights, in float32 and float64: a row kernel computes each row's logsumexp and loss from the
// logits, and the log-probabilities are never made.
TEST(Compile, LogSoftmaxAndNllLossReadTheLogitsOnce) {
  for (const auto reduction : {at::Reduction::Mean, at::Reduction::Sum, at::Reduction::None})
    for (const int64_t ignore_index : {int64_t{-100}, int64_t{3}}) {
      // Class weights with the second ignore_index.
      const bool weighted = ignore_index == 3;
      at::Tensor weight = torch::rand({45}, torch::kDouble) + 0.5;
      auto loss = [&](const at::Tensor& x, const at::Tensor& t) {
        std::optional<at::Tensor> w;
        if (weighted) w = weight.to(x.dtype());
        return at::nll_loss(torch::log_softmax(x, -1), t, w, reduction, ignore_index);
      };
      auto compiled = fx::compile(
          [&](const std::vector<c10::IValue>& in) { return loss(in[0].toTensor(), in[1].toTensor()); },
          fresh_options());
      for (const auto dtype : {torch::kFloat, torch::kDouble})
        for (int64_t n : {9, 33}) {
          at::Tensor x = torch::randn({n, 45}, dtype) * 3, t = torch::randint(45, {n});
          t[1] = ignore_index;
          t[4] = ignore_index;
          expect_close(run_compiled(*compiled, {x, t}).toTensor(), loss(x, t));
          // The labels' kernel (which rows count, and a label that indexes),
          // and the row kernel: max, sum of exp, log, the picked logit, the loss.
          EXPECT_EQ(compiled->report().kernels, 2u) << reduction << " " << ignore_index << " " << dtype;
          for (fx::Node* node : compiled->compiled_graph().graph().nodes())
            EXPECT_THAT(node->target().str(), testing::Not(HasSubstr("softmax")));
        }
      // Every label ignored: the mean is 0 / 0, NaN, as in eager.
      at::Tensor x = torch::randn({5, 45}), t = torch::full({5}, ignore_index, torch::kLong);
      at::Tensor got = run_compiled(*compiled, {x, t}).toTensor(), want = loss(x, t);
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6, /*equal_nan=*/true)) << got << want;
    }
  // cross_entropy, with a prologue (a temperature) whose result the gather
  // reads. A label out of range is an error, as in eager, not a read past
  // the row.
  auto loss = [](const at::Tensor& x, const at::Tensor& t) {
    return torch::nn::functional::cross_entropy(x / 0.7, t);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return loss(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({4, 10}), t = torch::randint(10, {4});
  expect_close(run_compiled(*compiled, {x, t}).toTensor(), loss(x, t));
  for (fx::Node* node : compiled->compiled_graph().graph().nodes())
    EXPECT_THAT(node->target().str(), testing::Not(HasSubstr("softmax")));
  t[2] = 10;
  EXPECT_ANY_THROW(compiled->run({x, t}));
}

// A causal mask, as attention applies it: masked_fill by a bool tensor (a
// [T, T] mask broadcast over batches and heads) before the softmax, and
// torch.where with a comparison made in the loop. Each is one row kernel
// that reads the mask as bytes.
TEST(Compile, MaskedSoftmaxIsOneRowKernel) {
  const double inf = std::numeric_limits<double>::infinity();
  auto masked = [&](const at::Tensor& x, const at::Tensor& mask) {
    return torch::softmax(x.masked_fill(mask, -inf) * 0.125, -1);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return masked(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  for (int64_t t : {19, 40}) {  // static kernels, then dynamic ones
    at::Tensor x = torch::randn({2, 3, t, t}) * 4;
    at::Tensor mask = torch::ones({t, t}, torch::kBool).triu(1);
    expect_close(run_compiled(*compiled, {x, mask}).toTensor(), masked(x, mask));
    EXPECT_EQ(compiled->report().kernels, 1u) << t;
    EXPECT_EQ(compiled->report().extern_nodes, 0u) << t;
  }
  auto where = [&](const at::Tensor& x, const at::Tensor& bias) {
    return torch::softmax(torch::where(x + bias > 0.0, x, -inf), -1);
  };
  auto compiled_where = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return where(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({6, 45}), bias = torch::randn({45}) + 2.0;
  expect_close(run_compiled(*compiled_where, {x, bias}).toTensor(), where(x, bias));
  EXPECT_EQ(compiled_where->report().kernels, 1u);
}

// Comparisons, logical operators, where and masked_fill against eager, in
// float32 and float64: NaN and inf among the values, a transposed and a
// broadcast bool input, bool outputs, partial vectors, and another size
// (dynamic kernels).
TEST(Compile, ComparisonsAndMasksComputeAsEager) {
  auto fn = [](const at::Tensor& x, const at::Tensor& y, const at::Tensor& m, const at::Tensor& row) {
    at::Tensor a = torch::where(x > y, x * 2.0, y - 1.0);
    at::Tensor b = (x.abs() < 0.5).logical_and(m.logical_not()).logical_or(x >= y.neg());
    at::Tensor c = x.masked_fill(x.isnan().logical_or(row), 0.0) + 1.0;
    at::Tensor d = (x == y).logical_xor(x != x).logical_or(x <= 0.25);
    at::Tensor e = torch::where(m, 3.0, y.exp());
    return std::make_tuple(a, b, c, d, e);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c, d, e] = fn(in[0].toTensor(), in[1].toTensor(), in[2].toTensor(), in[3].toTensor());
        return c10::ivalue::Tuple::create({a, b, c, d, e});
      },
      fresh_options());
  for (const auto dtype : {torch::kFloat, torch::kDouble})
    for (auto shape : std::vector<std::vector<int64_t>>{{5, 37}, {3, 20}, {0, 7}}) {
      at::Tensor x = torch::randn(shape, dtype), y = torch::randn(shape, dtype);
      if (x.numel() > 4) {
        x.view(-1)[0] = std::numeric_limits<double>::quiet_NaN();
        x.view(-1)[1] = std::numeric_limits<double>::infinity();
        x.view(-1)[2] = -std::numeric_limits<double>::infinity();
        y.view(-1)[3] = x.view(-1)[3];  // equal
      }
      at::Tensor m = (torch::rand({shape[1], shape[0]}) > 0.5).t();  // transposed
      at::Tensor row = torch::rand({1, shape[1]}) > 0.7;             // broadcast
      auto got = run_compiled(*compiled, {x, y, m, row}).toTupleRef().elements();
      auto [a, b, c, d, e] = fn(x, y, m, row);
      size_t i = 0;
      for (const at::Tensor& want : {a, b, c, d, e}) {
        const at::Tensor& have = got[i++].toTensor();
        ASSERT_EQ(have.scalar_type(), want.scalar_type()) << "output " << i - 1;
        ASSERT_EQ(have.sizes(), want.sizes()) << "output " << i - 1;
        if (want.scalar_type() == at::kBool)
          EXPECT_TRUE(torch::equal(have, want))
              << dtype << " " << c10::IntArrayRef(shape) << ", output " << i - 1 << ":\n"
              << have << want;
        else
          EXPECT_TRUE(at::allclose(have, want, 1e-6, 1e-7, /*equal_nan=*/true))
              << dtype << " " << c10::IntArrayRef(shape) << ", output " << i - 1 << ":\n"
              << have << want;
      }
      // The five loops read x or y: one loop (horizontal fusion), reading
      // the bool inputs and writing the bool outputs.
      EXPECT_EQ(compiled->report().kernels, 1u) << dtype << " " << c10::IntArrayRef(shape);
      // LibTorch's C++ where(m, 3.0, y) makes the 3.0 a tensor
      // (aten.scalar_tensor) and calls where.self: that is the one ATen call.
      for (fx::Node* n : compiled->compiled_graph().graph().nodes()) {
        const std::string& t = n->target().str();
        if (n->op() == fx::Op::call_function && t.rfind("fxcpp.compiled.", 0) != 0 &&
            t != "operator.getitem") {
          EXPECT_EQ(t, "torch.ops.aten.scalar_tensor.default");
        }
      }
    }
}

TEST(Compile, LayerNormAndRmsNormAreOneRowKernelEach) {
  torch::manual_seed(0);
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({40}));
  norm->weight.data().normal_();
  norm->bias.data().normal_();
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *norm, [&](const std::vector<c10::IValue>& in) { return norm->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({3, 6, 40}) * 3 + 1;
  expect_close(run_compiled(*compiled, {x}).toTensor(), norm->forward(x));
  EXPECT_EQ(compiled->report().kernels, 1u);
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), testing::Not(HasSubstr("layer_norm")));

  // Llama's RMSNorm, written out: x * rsqrt(mean(x^2) + eps) * w.
  at::Tensor w = torch::randn({24});
  auto rms = [&](const at::Tensor& h) { return h * torch::rsqrt(h.pow(2).mean(-1, true) + 1e-6) * w; };
  auto compiled_rms =
      fx::compile([&](const std::vector<c10::IValue>& in) { return rms(in[0].toTensor()); }, fresh_options());
  at::Tensor h = torch::randn({9, 24});
  expect_close(run_compiled(*compiled_rms, {h}).toTensor(), rms(h));
  EXPECT_EQ(compiled_rms->report().kernels, 1u);
  EXPECT_EQ(compiled_rms->report().fused_nodes, 6u);
}

// A convolution of a network of them (which the layout pass makes
// channels_last) in an inference program: oneDNN's with a packed weight
// where LibTorch has oneDNN (pack_weights_test.cpp).
std::string convolution_target() {
  return at::hasMKLDNN() ? "torch.ops.mkldnn._convolution_pointwise.default"
                         : "torch.ops.aten.convolution.default";
}

TEST(Compile, BatchNormInEvalFusesWithItsActivation) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  torch::nn::BatchNorm2d bn(8);
  torch::NoGradGuard no_grad;
  bn->running_mean.normal_();
  bn->running_var.uniform_(0.5, 2);
  bn->weight.normal_();
  bn->bias.normal_();
  torch::nn::Sequential net(conv, bn, torch::nn::ReLU());
  net->eval();
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({2, 3, 10, 12});
  expect_close(run_compiled(*compiled, {x}).toTensor(), net->forward(x));
  const std::string text = compiled->compiled_graph().graph().to_string();
  EXPECT_THAT(text, testing::Not(HasSubstr("batch_norm")));
  // One convolution stays row-major (layout.cpp), and so unpacked.
  EXPECT_THAT(text, HasSubstr("torch.ops.aten.convolution.default"));
  // rsqrt(var + eps) over [C, 1, 1], once per channel; then the
  // normalization and the ReLU, one kernel after the convolution.
  EXPECT_EQ(compiled->report().kernels, 2u) << text;
  EXPECT_THAT(text, HasSubstr("cpp_fused_sub_mul_add_relu_1"));
  // The statistics are read, not frozen.
  bn->running_mean.add_(1);
  expect_close(run_compiled(*compiled, {x}).toTensor(), net->forward(x));
}

// The generated source of the last compiled specialization, read from the
// debug directory.
std::string debug_source(const std::string& debug_dir) {
  for (const auto& dir : std::filesystem::directory_iterator(debug_dir)) {
    std::ifstream in(dir.path() / "source.cpp");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  return "";
}

// A kernel writes its outputs in the layout eager gives them, as ATen's
// TensorIterator does: dense in the order of its input (channels_last
// here), and loops over them as one flat loop in that order.
TEST(Compile, AKernelKeepsItsInputsLayout) {
  auto fn = [](const at::Tensor& x, const at::Tensor& scale) { return torch::relu(x * scale + 1.0) - x; };
  fx::CompileOptions options = fresh_options();
  options.debug_dir = options.cache_dir + "_debug";
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor(), in[1].toTensor()); }, options);
  at::Tensor x = torch::randn({2, 8, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor scale = torch::randn({2, 8, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor got = run_compiled(*compiled, {x, scale}).toTensor(), want = fn(x, scale);
  expect_close(got, want);
  EXPECT_EQ(compiled->report().kernels, 1u);
  EXPECT_EQ(got.strides(), want.strides());
  EXPECT_TRUE(got.is_contiguous(at::MemoryFormat::ChannelsLast));
  const std::string source = debug_source(options.debug_dir);
  EXPECT_THAT(source, HasSubstr("const int64_t kN = dims[0];"));  // one flat loop
  EXPECT_THAT(source, testing::Not(HasSubstr("kOuter")));
  // A per-channel vector broadcast over it: the inner loop runs over the
  // channels, and the output is channels_last still.
  at::Tensor column = torch::randn({8, 1, 1});
  got = run_compiled(*compiled, {x, column}).toTensor();
  want = fn(x, column);
  expect_close(got, want);
  EXPECT_EQ(got.strides(), want.strides());
  // The same values laid out row-major: another specialization, row-major.
  got = run_compiled(*compiled, {x.contiguous(), scale.contiguous()}).toTensor();
  expect_close(got, fn(x, scale));
  EXPECT_TRUE(got.is_contiguous());
}

// A channels_last model (a LibTorch user's `model->to(at::kChannelsLast)`):
// the batch norm and ReLU after each convolution are one channels_last loop,
// and the result is laid out as eager's.
TEST(Compile, AChannelsLastModelStaysChannelsLast) {
  torch::manual_seed(0);
  auto resnet = fx::models::resnet18(10);
  fx::models::randomize_batch_norm_statistics(*resnet);
  resnet->eval();
  resnet->to(at::kFloat);
  torch::NoGradGuard no_grad;
  for (auto& p : resnet->parameters())
    p.set_data(p.contiguous(p.dim() == 4 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
  auto forward = [&](const at::Tensor& x) { return resnet->forward({fx::Value(x)}).tensor(); };
  auto compiled = fx::compile(
      *resnet, [&](const std::vector<c10::IValue>& in) { return forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({2, 3, 64, 64}).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor got = run_compiled(*compiled, {x}).toTensor(), want = forward(x);
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5)) << (got - want).abs().max().item<float>();
  // What each kernel node wrote, recorded by running the compiled graph.
  fx::GraphModule& graph = compiled->compiled_graph();
  fx::passes::ShapeProp(graph).propagate({fx::Value(x)});
  size_t channels_last = 0;
  for (fx::Node* n : graph.graph().nodes())
    if (n->target().str().rfind("fxcpp.compiled.", 0) == 0) {
      const auto* m = n->meta().get<fx::passes::TensorMetadata>("tensor_meta");
      channels_last += m && m->memory_format == at::MemoryFormat::ChannelsLast;
    }
  EXPECT_GE(channels_last, 8u);
}

// A network of convolutions reads channels_last, which oneDNN runs faster:
// its row-major input is copied once, and the result comes back in eager's
// layout. One convolution alone stays row-major.
TEST(Compile, ConvolutionsReadChannelsLast) {
  torch::manual_seed(0);
  torch::nn::Sequential net(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
      torch::nn::ReLU(), torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)), torch::nn::ReLU());
  net->eval();
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return net->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({2, 3, 10, 12});
  at::Tensor got = run_compiled(*compiled, {x}).toTensor(), want = net->forward(x);
  expect_close(got, want);
  EXPECT_EQ(got.strides(), want.strides());
  const std::string text = compiled->compiled_graph().graph().to_string();
  EXPECT_THAT(text, HasSubstr("torch.ops.aten.clone.default](args = (%arg0_1,), kwargs = {memory_format: "
                              "torch.channels_last})"));
  EXPECT_THAT(text, HasSubstr("kwargs = {memory_format: torch.contiguous_format})"));
  // The second convolution reads the first one's result, channels_last already: one copy in.
  size_t copies = 0;
  for (size_t at = text.find("torch.channels_last"); at != std::string::npos;
       at = text.find("torch.channels_last", at + 1))
    ++copies;
  EXPECT_EQ(copies, 1u) << text;

  torch::nn::Sequential one(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3)), torch::nn::ReLU());
  auto single = fx::compile(
      *one, [&](const std::vector<c10::IValue>& in) { return one->forward(in[0].toTensor()); },
      fresh_options());
  expect_close(run_compiled(*single, {x}).toTensor(), one->forward(x));
  EXPECT_THAT(single->compiled_graph().graph().to_string(), testing::Not(HasSubstr("clone")));
}

// A view of a convolution's channels_last result that cannot view it as it
// is laid out now (a flatten across channels and pixels) becomes a reshape,
// which copies; one that can (pixels merged) stays a view.
TEST(Compile, AViewOfAChannelsLastImageThatCannotViewItCopies) {
  torch::manual_seed(0);
  torch::nn::Conv2d first(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
      second(torch::nn::Conv2dOptions(8, 8, 3));
  torch::nn::Linear fc(8 * 6 * 6, 10);
  torch::nn::Sequential root(first, second, fc);
  auto fn = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor y = torch::relu(second->forward(torch::relu(first->forward(in[0].toTensor()))));
    at::Tensor pixels = y.view({y.size(0), 8, 36}).sum(-1);  // a view of channels_last pixels
    return c10::ivalue::Tuple::create({fc->forward(y.flatten(1)), pixels});
  };
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(*root, fn, fresh_options());
  for (int call = 0; call < 2; ++call) {  // the second runs the compiled program
    at::Tensor x = torch::randn({4, 3, 8, 8});
    const auto got = run_compiled(*compiled, {x}).toTupleRef().elements();
    const auto want = fn({x}).toTupleRef().elements();
    for (size_t i = 0; i < 2; ++i) expect_close(got[i].toTensor(), want[i].toTensor());
  }
  const std::string text = compiled->compiled_graph().graph().to_string();
  EXPECT_THAT(text, HasSubstr("torch.channels_last"));
  EXPECT_THAT(text,
              HasSubstr("call_function[target=torch.ops.aten.reshape.default](args = (%relu_1, [4, 288])"));
  EXPECT_THAT(text,
              HasSubstr("call_function[target=torch.ops.aten.view.default](args = (%relu_1, [4, 8, 36])"));
}

// An operator that counts its CPU calls, with a meta kernel.
std::atomic<int> counted_calls{0};
at::Tensor counted_cpu(const at::Tensor& x) {
  ++counted_calls;
  return x.clone();
}
at::Tensor counted_meta(const at::Tensor& x) { return at::empty_like(x); }
TORCH_LIBRARY(fxcpp_compile_test, m) { m.def("counted(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(fxcpp_compile_test, CPU, m) { m.impl("counted", counted_cpu); }
TORCH_LIBRARY_IMPL(fxcpp_compile_test, Meta, m) { m.impl("counted", counted_meta); }
at::Tensor counted(const at::Tensor& x) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("fxcpp_compile_test::counted", "")
                       .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

// Every node of the compiled graph holds the sizes, strides and dtype that
// running it on `x` records (ShapeProp).
void expect_metadata_a_run_gives(fx::GraphModule& graph, const at::Tensor& x, size_t min_nodes) {
  ASSERT_THAT(graph.graph().to_string(), HasSubstr("torch.channels_last"));
  std::vector<std::pair<fx::Node*, fx::passes::TensorMetadata>> propagated;
  for (fx::Node* n : graph.graph().nodes())
    if (const auto* m = n->meta().get<fx::passes::TensorMetadata>("tensor_meta"))
      propagated.emplace_back(n, *m);
  EXPECT_GE(propagated.size(), min_nodes);
  fx::passes::ShapeProp(graph).propagate({fx::Value(x)});
  for (const auto& [n, before] : propagated) {
    const auto* ran = n->meta().get<fx::passes::TensorMetadata>("tensor_meta");
    ASSERT_NE(ran, nullptr) << n->name();
    EXPECT_EQ(ran->shape, before.shape) << n->format_node();
    EXPECT_EQ(ran->stride, before.stride) << n->format_node();
    EXPECT_EQ(ran->dtype, before.dtype) << n->format_node();
  }
}

// The layouts the layout pass propagates are those a run gives: every node
// of the compiled graph holds the sizes and strides that running it
// records. They are propagated on meta tensors, without running the
// model's operators again: the call that compiles runs each once.
TEST(Compile, PropagatedLayoutsAreThoseARunGives) {
  torch::manual_seed(0);
  using torch::nn::Conv2dOptions;
  torch::nn::Sequential net(torch::nn::Conv2d(Conv2dOptions(3, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
                            torch::nn::Conv2d(Conv2dOptions(8, 8, 3).padding(1).groups(8)),
                            torch::nn::Conv2d(Conv2dOptions(8, 16, 1).stride(2)), torch::nn::Linear(16, 5));
  net->eval();
  torch::NoGradGuard no_grad;
  auto forward = [&](const at::Tensor& x) {
    at::Tensor a = torch::relu(
        net[1]->as<torch::nn::BatchNorm2d>()->forward(net[0]->as<torch::nn::Conv2d>()->forward(x)));
    at::Tensor b = torch::max_pool2d(a, 2);
    at::Tensor c = torch::relu(counted(net[2]->as<torch::nn::Conv2d>()->forward(b)) + b);
    at::Tensor d = torch::adaptive_avg_pool2d(net[3]->as<torch::nn::Conv2d>()->forward(c), {1, 1}).flatten(1);
    return std::make_tuple(net[4]->as<torch::nn::Linear>()->forward(d), c * 0.5);
  };
  auto compiled = fx::compile(
      *net,
      [&](const std::vector<c10::IValue>& in) {
        auto [y, c] = forward(in[0].toTensor());
        return c10::ivalue::Tuple::create({y, c});
      },
      fresh_options());
  at::Tensor x = torch::randn({4, 3, 16, 16});
  counted_calls = 0;
  compiled->run({x});
  EXPECT_EQ(counted_calls, 1);  // captured; not run again to propagate the layouts
  auto got = compiled->run({x}).toTupleRef().elements();
  EXPECT_EQ(counted_calls, 2);
  auto [y, c] = forward(x);
  expect_close(got[0].toTensor(), y);
  expect_close(got[1].toTensor(), c);
  EXPECT_EQ(got[1].toTensor().strides(), c.strides());
  expect_metadata_a_run_gives(compiled->compiled_graph(), x, 15);
}

// Transposed convolutions (strided, padded, with an output padding and
// groups) have their own size formula in the meta propagation: checked
// against a run as above.
TEST(Compile, PropagatedLayoutsOfTransposedConvolutionsAreThoseARunGives) {
  torch::manual_seed(0);
  using torch::nn::Conv2dOptions;
  using torch::nn::ConvTranspose2dOptions;
  torch::nn::Sequential net(
      torch::nn::Conv2d(Conv2dOptions(3, 8, 3).padding(1)),
      torch::nn::ConvTranspose2d(ConvTranspose2dOptions(8, 8, 3).stride(2).padding(1).output_padding(1)),
      torch::nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 2).stride(2).groups(4)),
      torch::nn::Conv2d(Conv2dOptions(4, 4, 3)));
  torch::NoGradGuard no_grad;
  auto forward = [&](const at::Tensor& x) {
    at::Tensor a = torch::relu(net[0]->as<torch::nn::Conv2d>()->forward(x));
    at::Tensor b = counted(net[1]->as<torch::nn::ConvTranspose2d>()->forward(a)) * 2.0;
    at::Tensor c = torch::sigmoid(net[2]->as<torch::nn::ConvTranspose2d>()->forward(b));
    return net[3]->as<torch::nn::Conv2d>()->forward(c) + 1.0;
  };
  auto compiled = fx::compile(
      *net, [&](const std::vector<c10::IValue>& in) { return c10::IValue(forward(in[0].toTensor())); },
      fresh_options());
  at::Tensor x = torch::randn({2, 3, 10, 10});
  counted_calls = 0;
  compiled->run({x});
  EXPECT_EQ(counted_calls, 1);  // captured; not run again to propagate the layouts
  at::Tensor got = compiled->run({x}).toTensor();
  at::Tensor want = forward(x);
  expect_close(got, want);
  EXPECT_EQ(got.strides(), want.strides());
  expect_metadata_a_run_gives(compiled->compiled_graph(), x, 8);
}

// A kernel writes its result into the buffer of an input that nothing
// reads after it and that a node made fresh (eager's `relu_(out += b)`), so
// that a call holds one buffer less; never into one that is read again.
TEST(Compile, AKernelWritesIntoTheBufferOfAnInputNothingReadsAfterIt) {
  auto dead = [](const at::Tensor& x, const at::Tensor& w) {
    return torch::relu(torch::mm(x, w) * 2.0 + 1.0);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return dead(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({16, 32}), w = torch::randn({32, 8});
  expect_close(run_compiled(*compiled, {x, w}).toTensor(), dead(x, w));
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), HasSubstr("kwargs = {reuse_input: 0})"));
  expect_close(compiled->run({x, w}).toTensor(), dead(x, w));  // and again, with the plan's values freed

  // The product is also an output: the kernel leaves it as it is.
  auto alive = [](const at::Tensor& x, const at::Tensor& w) {
    at::Tensor p = torch::mm(x, w);
    return std::vector<at::Tensor>{torch::relu(p * 2.0 + 1.0), p};
  };
  auto both = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        return c10::IValue(c10::List<at::Tensor>(alive(in[0].toTensor(), in[1].toTensor())));
      },
      fresh_options());
  c10::IValue got = run_compiled(*both, {x, w});
  EXPECT_THAT(both->compiled_graph().graph().to_string(), testing::Not(HasSubstr("reuse_input")));
  const auto want = alive(x, w);
  const auto list = got.toTensorList();
  expect_close(list.get(0), want[0]);
  expect_close(list.get(1), want[1]);
}

// A residual block's join, as resnet's: relu(bn(conv(x)) + bn(conv(x))).
struct ResidualJoin : torch::nn::Module {
  ResidualJoin()
      : conv_a(register_module("conv_a", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 8, 1)))),
        conv_b(register_module("conv_b", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 8, 1)))),
        bn_a(register_module("bn_a", torch::nn::BatchNorm2d(8))),
        bn_b(register_module("bn_b", torch::nn::BatchNorm2d(8))) {}
  at::Tensor forward(const at::Tensor& x) { return torch::relu(bn_a(conv_a(x)) + bn_b(conv_b(x))); }
  torch::nn::Conv2d conv_a, conv_b;
  torch::nn::BatchNorm2d bn_a, bn_b;
};

// What is computed from the weights alone (batch norm's rsqrt(var + eps))
// runs just before the node that reads it, not where it was captured, so
// that it does not live across the other branch's convolution.
TEST(Compile, WeightComputationsRunJustBeforeTheirReader) {
  torch::manual_seed(0);
  auto block = std::make_shared<ResidualJoin>();
  block->eval();
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(
      *block, [&](const std::vector<c10::IValue>& in) { return block->forward(in[0].toTensor()); },
      fresh_options());
  at::Tensor x = torch::randn({2, 4, 6, 6});
  expect_close(run_compiled(*compiled, {x}).toTensor(), block->forward(x));
  std::vector<std::string> order;
  for (fx::Node* n : compiled->compiled_graph().graph().nodes()) {
    const std::string& t = n->target().str();
    if (t == convolution_target()) order.push_back("conv");
    if (t.find("rsqrt") != std::string::npos) order.push_back("rsqrt");
    if (t.find("relu") != std::string::npos) order.push_back("join");
  }
  EXPECT_EQ(order, (std::vector<std::string>{"conv", "conv", "rsqrt", "rsqrt", "join"}));
}

TEST(Compile, AValuePerRowCanBeAnOutput) {
  auto fn = [](const at::Tensor& x) {
    at::Tensor s = (x * x).sum(-1, true);
    return std::make_tuple(s + 1.0, x / s, x.amax(-1, true) - x.amin(-1, true));
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c] = fn(in[0].toTensor());
        return c10::ivalue::Tuple::create({a, b, c});
      },
      fresh_options());
  at::Tensor x = torch::randn({6, 21});
  auto got = run_compiled(*compiled, {x}).toTupleRef().elements();
  auto [a, b, c] = fn(x);
  expect_close(got[0].toTensor(), a);
  expect_close(got[1].toTensor(), b);
  expect_close(got[2].toTensor(), c);
  // A reduction over another dimension, or without keepdim, stays ATen's.
  auto other =
      fx::compile([](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 2).sum(0) + 1.0; },
                  fresh_options());
  expect_close(run_compiled(*other, {x}).toTensor(), (x * 2).sum(0) + 1.0);
  EXPECT_EQ(other->report().kernels, 0u);
}

// A reduction over the last dimension without keepdim joins the kernel of
// what it reduces: the kernel writes a value per row, a view drops the
// dimension.
TEST(Compile, AReductionWithoutKeepdimFusesWithWhatItReduces) {
  auto fn = [](const at::Tensor& x) {
    return std::make_tuple((x * x + 1.0).mean(-1), x.exp().amax(1), (x - 1.0).sum(-1), x.sigmoid().amin(-1));
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c, d] = fn(in[0].toTensor());
        return c10::ivalue::Tuple::create({a, b, c, d});
      },
      fresh_options());
  at::Tensor x = torch::randn({6, 21});
  auto got = run_compiled(*compiled, {x}).toTupleRef().elements();
  auto [a, b, c, d] = fn(x);
  expect_close(got[0].toTensor(), a);
  expect_close(got[1].toTensor(), b);
  expect_close(got[2].toTensor(), c);
  expect_close(got[3].toTensor(), d);
  // One row kernel each (no horizontal fusion yet), with its prologue.
  EXPECT_EQ(compiled->report().kernels, 4u);
  EXPECT_EQ(compiled->report().fused_nodes, 9u);
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), HasSubstr("torch.ops.aten.view.default"));
  // A tensor of one dimension reduces to a 0-dim one.
  auto scalar = fx::compile(
      [](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 2.0).sum(-1); }, fresh_options());
  at::Tensor v = torch::randn({37});
  at::Tensor s = run_compiled(*scalar, {v}).toTensor();
  EXPECT_EQ(s.dim(), 0);
  expect_close(s, (v * 2.0).sum(-1));
  EXPECT_EQ(scalar->report().kernels, 1u);
  // With nothing to fuse before it, the reduction stays one ATen call.
  auto alone = fx::compile([](const std::vector<c10::IValue>& in) { return in[0].toTensor().sum(-1); },
                           fresh_options());
  expect_close(run_compiled(*alone, {x}).toTensor(), x.sum(-1));
  EXPECT_EQ(alone->report().kernels, 0u);
  EXPECT_EQ(alone->report().extern_nodes, 1u);
}

// A reduction over several dimensions, the last among them, or over all of
// them reduces each row in the kernel of what it reduces, which writes a
// value per row; ATen reduces those.
TEST(Compile, AReductionOverSeveralDimensionsReducesEachRowInItsKernel) {
  auto fn = [](const at::Tensor& x) {
    return std::make_tuple(((x - 0.5) * (x - 0.5)).mean(), x.exp().sum(), (x * 3.0).amax({0, 2}, true),
                           x.sigmoid().amin({1, 2}), (x + 1.0).sum({-1, 0}), (x * x).mean({0, 1, 2}, true));
  };
  auto as_tuple = [&](const at::Tensor& x) {
    auto [a, b, c, d, e, f] = fn(x);
    return c10::ivalue::Tuple::create({a, b, c, d, e, f});
  };
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    auto compiled = fx::compile(
        [&](const std::vector<c10::IValue>& in) { return as_tuple(in[0].toTensor()); }, fresh_options());
    at::Tensor x = torch::randn({8, 20, 32}, dtype);
    auto got = run_compiled(*compiled, {x}).toTupleRef().elements();
    auto want = as_tuple(x)->elements();
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(i);
      const at::Tensor g = got[i].toTensor(), w = want[i].toTensor();
      ASSERT_EQ(g.sizes(), w.sizes());
      EXPECT_EQ(g.scalar_type(), dtype);
      EXPECT_TRUE(at::allclose(g, w, 1e-5, 1e-5)) << "max difference " << (g - w).abs().max().item<double>();
    }
    // Each prologue (x - 0.5 is computed once) and its reduction over rows
    // are one kernel; the six reductions of the values per row they write
    // stay ATen calls, each reading its kernel's.
    const fx::CompileReport& report = compiled->report();
    EXPECT_EQ(report.kernels, 6u);
    EXPECT_EQ(report.fused_nodes, 13u);
    size_t aten_reductions = 0;
    for (fx::Node* node : compiled->compiled_graph().graph().nodes()) {
      const std::string& t = node->target().str();
      if (node->op() != fx::Op::call_function || t.rfind("fxcpp.compiled.", 0) == 0) continue;
      if (t.find(".sum.") == std::string::npos && t.find(".mean.") == std::string::npos &&
          t.find(".amax.") == std::string::npos && t.find(".amin.") == std::string::npos)
        continue;
      ++aten_reductions;
      // They read a value per row, [8, 20, 1].
      EXPECT_THAT(node->args()[0].node()->target().str(), testing::StartsWith("fxcpp.compiled.")) << t;
    }
    EXPECT_EQ(aten_reductions, 6u);
  }
  // Rows too short for vector loads, and a value that is not row-major
  // (what a transposed input makes), stay ATen's reductions.
  auto sum_all = [](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 2.0).sum(); };
  for (at::Tensor x : {torch::randn({64, 8}), torch::randn({64, 64}).t()}) {
    auto compiled = fx::compile(sum_all, fresh_options());
    expect_close(run_compiled(*compiled, {x}).toTensor(), (x * 2.0).sum());
    EXPECT_EQ(compiled->report().kernels, 0u);
  }
}

// Traced models compiled as GraphModules: convolutions, batch norms and
// matrix products stay ATen calls, what is around them fuses.
void expect_compiled_model_matches(fx::Module& model, at::Tensor x, size_t min_kernels) {
  model.eval();
  torch::NoGradGuard no_grad;
  std::unique_ptr<fx::GraphModule> gm = fx::symbolic_trace(model);
  auto compiled = fx::compile(*gm, fresh_options());
  at::Tensor got = run_compiled(*compiled, {x}).toTensor(), want = gm->run({x}).toTensor();
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5))
      << "max difference " << (got - want).abs().max().item<float>();
  EXPECT_GE(compiled->report().kernels, min_kernels);
}

// ones_like, zeros_like, full_like and fill(empty_like(x)) that only
// kernels read are constants of those kernels: no tensor is made, and x
// (read by empty_like for its shape alone) stays inside its kernel.
TEST(Compile, ATensorOfOneNumberIsAConstantOfItsKernel) {
  auto f = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    const at::Tensor& x = in[0].toTensor();
    at::Tensor s = torch::sigmoid(x);
    at::Tensor one_minus = at::empty_like(s).fill_(1.0) - s;
    return (torch::ones_like(x) + x * one_minus) * torch::full_like(x, 2.0) + torch::zeros_like(x);
  };
  auto compiled = fx::compile(f, fresh_options());
  at::Tensor x = torch::randn({64, 48});
  expect_close(run_compiled(*compiled, {x}).toTensor(), f({x}).toTensor());
  EXPECT_EQ(compiled->report().kernels, 1u);
  EXPECT_EQ(compiled->report().extern_nodes, 0u) << compiled->compiled_graph().code();

  // Returned, the tensor is made.
  auto g = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    const at::Tensor& x = in[0].toTensor();
    at::Tensor ones = torch::ones_like(x);
    return c10::ivalue::Tuple::create({ones, (ones - x) * x});
  };
  auto returned = fx::compile(g, fresh_options());
  const auto got = run_compiled(*returned, {x}).toTupleRef().elements();
  expect_close(got[0].toTensor(), torch::ones_like(x));
  expect_close(got[1].toTensor(), (1 - x) * x);
}

TEST(Compile, TorchvisionPortsMatchEager) {
  torch::manual_seed(0);
  auto resnet = fx::models::resnet18(10);
  fx::models::randomize_batch_norm_statistics(*resnet);
  expect_compiled_model_matches(*resnet, torch::randn({2, 3, 64, 64}), 8);  // residual add + relu per block
  auto mobilenet = fx::models::mobilenet_v2(10);
  fx::models::randomize_batch_norm_statistics(*mobilenet);
  // Its ReLU6s follow batch norms and its residual adds stand alone: nothing to fuse.
  expect_compiled_model_matches(*mobilenet, torch::randn({1, 3, 64, 64}), 0);
  // A small ViT: LayerNorms, attention's softmax, the MLP's GELU.
  fx::models::VisionTransformer vit(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  expect_compiled_model_matches(vit, torch::randn({2, 3, 32, 32}), 4);
  // AlexNet's classifier flattens a 6x6 image the layout pass made
  // channels_last: a reshape, which copies.
  auto alexnet = fx::models::alexnet(10);
  expect_compiled_model_matches(*alexnet, torch::randn({2, 3, 64, 64}), 0);
}

TEST(Compile, NewSizesCompileANewSpecialization) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  for (auto sizes : {std::vector<int64_t>{8, 16}, {5, 7}, {8, 16}, {1000}}) {
    at::Tensor x = torch::randn(sizes), b = torch::randn({sizes.back()});
    expect_close(run_compiled(*compiled, {x, b}).toTensor(), chain(x, b));
  }
  EXPECT_EQ(compiled->num_specializations(), 3u);
  // [8, 16]'s kernel is static (its sizes in its source); [5, 7] then gets
  // a dynamic one, which every later size of that form runs; [1000] is one
  // flat loop, another program.
  EXPECT_EQ(compiled->num_programs(), 3u);
  // Another dtype: a guard fails, and float64 is another program.
  at::Tensor xd = torch::randn({8, 16}, torch::kDouble), bd = torch::randn({16}, torch::kDouble);
  expect_close(run_compiled(*compiled, {xd, bd}).toTensor(), chain(xd, bd));
  EXPECT_EQ(compiled->num_specializations(), 4u);
  EXPECT_EQ(compiled->num_programs(), 4u);
  EXPECT_EQ(compiled->report().kernels, 1u);
  // int16 is not fused: it runs on ATen.
  at::Tensor xi = torch::randint(-9, 9, {8, 16}, torch::kShort),
             bi = torch::randint(-9, 9, {16}, torch::kShort);
  auto int_chain = [](const at::Tensor& x, const at::Tensor& b) { return (x * b + 1).neg() * x; };
  auto compiled_int = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return int_chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  EXPECT_TRUE(torch::equal(run_compiled(*compiled_int, {xi, bi}).toTensor(), int_chain(xi, bi)));
  EXPECT_EQ(compiled_int->report().kernels, 0u);
  EXPECT_EQ(compiled_int->num_programs(), 0u);
}

// The first size's kernels are static. From the second size on, kernels
// take their sizes and strides as arguments: other sizes of the same
// program build nothing and run the kernel built for the second.
TEST(Compile, NewSizesRunTheKernelBuiltForTheSecond) {
  auto fn = [](const at::Tensor& x, const at::Tensor& b) {
    return torch::softmax(chain(x, b), -1) * x.exp();  // a row kernel
  };
  auto compiled =
      fx::compile([&](const std::vector<c10::IValue>& in) { return fn(in[0].toTensor(), in[1].toTensor()); },
                  fresh_options());
  std::string first, library;
  // Partial vectors and none, one row and many, rank 2 and 3.
  for (auto sizes : {std::vector<int64_t>{8, 16}, {5, 7}, {37, 100}, {2, 1000}, {3, 4, 33}, {2, 6, 5}}) {
    at::Tensor x = torch::randn(sizes), b = torch::randn({sizes.back()});
    expect_close(run_compiled(*compiled, {x, b}).toTensor(), fn(x, b));
    EXPECT_EQ(compiled->report().kernels, 1u) << sizes;
    if (first.empty()) {
      first = compiled->report().library;
    } else if (sizes.size() == 2) {
      if (library.empty()) library = compiled->report().library;
      EXPECT_EQ(compiled->report().library, library) << sizes;
      EXPECT_NE(compiled->report().library, first) << sizes;
    }
  }
  EXPECT_EQ(compiled->num_specializations(), 6u);
  EXPECT_EQ(compiled->num_programs(), 3u);  // static, rank 2, rank 3

  // Inputs read through strides: a transposed input is gathered with the
  // stride of this call.
  auto transposed = [](const at::Tensor& x, const at::Tensor& col) { return torch::tanh(x.t() * col) + 1.0; };
  auto compiled_t = fx::compile(
      [&](const std::vector<c10::IValue>& in) { return transposed(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  for (int64_t n : {19, 4, 130}) {
    at::Tensor x = torch::randn({n, 12}), col = torch::randn({12, 1});
    expect_close(run_compiled(*compiled_t, {x, col}).toTensor(), transposed(x, col));
  }
  EXPECT_EQ(compiled_t->num_programs(), 2u);  // static, then dynamic
}

TEST(Compile, DynamicOnAndOff) {
  auto libraries = [](fx::CompileOptions::Dynamic dynamic) {
    fx::CompileOptions options = fresh_options();
    options.dynamic = dynamic;
    auto compiled = fx::compile(
        [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
        options);
    std::set<std::string> out;
    for (int64_t n : {8, 5, 12}) {
      at::Tensor x = torch::randn({n, 16}), b = torch::randn({16});
      expect_close(run_compiled(*compiled, {x, b}).toTensor(), chain(x, b));
      out.insert(compiled->report().library);
    }
    EXPECT_EQ(compiled->num_programs(), out.size());
    return out.size();
  };
  EXPECT_EQ(libraries(fx::CompileOptions::Dynamic::on), 1u);         // dynamic from the first size
  EXPECT_EQ(libraries(fx::CompileOptions::Dynamic::automatic), 2u);  // static, then dynamic
  EXPECT_EQ(libraries(fx::CompileOptions::Dynamic::off), 3u);        // static for each
}

// A size of 1 is a form of its own (the dimension is broadcast), as
// torch.compile specializes sizes 0 and 1.
TEST(Compile, ASizeOfOneIsAnotherProgram) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  for (auto sizes : {std::vector<int64_t>{4, 16}, {1, 16}, {4, 1}, {9, 3}}) {
    at::Tensor x = torch::randn(sizes), b = torch::randn({sizes.back()});
    expect_close(run_compiled(*compiled, {x, b}).toTensor(), chain(x, b));
  }
  // static [4, 16]; dynamic: [1, 16] flat; [4, 1] flat, b one value; rows reading b.
  EXPECT_EQ(compiled->num_programs(), 4u);
}

// A kernel node takes the shape it loops over; called with inputs of
// another shape or layout it refuses, or reads a contiguous copy.
TEST(Compile, AKernelNodeChecksItsInputs) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  auto kernel_of = [&](const at::Tensor& x, const at::Tensor& b) {
    compiled->run({x, b});
    for (fx::Node* n : compiled->compiled_graph().graph().nodes())
      if (n->target().str().rfind("fxcpp.compiled.", 0) == 0) return fx::resolve_function(n->target());
    throw std::runtime_error("no kernel node");
  };
  at::Tensor x2 = torch::randn({3, 40}), b2 = torch::randn({40});
  // The first size's kernel is static: it refuses another.
  auto static_call = kernel_of(torch::randn({6, 16}), torch::randn({16}));
  EXPECT_THAT(
      [&] {
        static_call->call({x2, b2, std::vector<int64_t>{3, 40}}, {});
      },
      testing::ThrowsMessage<fx::Error>(HasSubstr("the sizes and layout the kernel was built for")));
  // The second's is dynamic: another size of the same form, called directly.
  auto call = kernel_of(torch::randn({7, 16}), torch::randn({16}));
  expect_close(call->call({x2, b2, std::vector<int64_t>{3, 40}}, {}).toTensor(), chain(x2, b2));
  // A transposed x: not the form (rows of x contiguous): read from a copy.
  at::Tensor xt = torch::randn({40, 3}).t();
  expect_close(call->call({xt, b2, std::vector<int64_t>{3, 40}}, {}).toTensor(), chain(xt, b2));
  EXPECT_THAT(
      [&] {
        call->call({x2, torch::randn({16}), std::vector<int64_t>{3, 40}}, {});
      },
      testing::ThrowsMessage<fx::Error>(HasSubstr("does not broadcast to the kernel's shape [3, 40]")));
  EXPECT_THAT(
      [&] {
        call->call({x2.to(torch::kDouble), b2, std::vector<int64_t>{3, 40}}, {});
      },
      testing::ThrowsMessage<fx::Error>(
          HasSubstr("input 0 is Double on cpu; the kernel takes a torch.float32 CPU tensor there")));
  EXPECT_THAT(
      [&] {
        call->call({x2, b2}, {});
      },
      testing::ThrowsMessage<fx::Error>(HasSubstr("takes 2 tensors and the shape it loops over")));
}

TEST(Compile, ThreadsShareOneCompiledModule) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  // The inputs and expected outputs are made here: LibTorch's random
  // generator is created lazily, by whichever thread asks first.
  std::vector<std::vector<std::pair<std::vector<c10::IValue>, at::Tensor>>> work(4);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 20; ++i) {
      const int64_t n = 8 + (t + i) % 3;  // three specializations, compiled by whichever thread comes first
      at::Tensor x = torch::randn({n, 16}), b = torch::randn({16});
      work[t].emplace_back(std::vector<c10::IValue>{x, b}, chain(x, b));
    }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (const auto& [inputs, want] : work[t])
        if (!at::allclose(compiled->run(inputs).toTensor(), want, 1e-5, 1e-6)) ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(compiled->num_specializations(), 3u);
}

TEST(Compile, AfterEightProgramsTheOriginalCodeRuns) {
  int original_calls = 0;
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        ++original_calls;  // capture runs the code too
        return chain(in[0].toTensor(), in[1].toTensor());
      },
      fresh_options());
  // Each rank is a program of its own.
  std::vector<int64_t> sizes{3};
  for (int rank = 1; rank <= 10; ++rank) {
    at::Tensor x = torch::randn(sizes), b = torch::randn({3});
    expect_close(run_compiled(*compiled, {x, b}).toTensor(), chain(x, b));
    sizes.insert(sizes.begin(), 2);
  }
  EXPECT_EQ(compiled->num_programs(), fx::CompiledModule::kMaxPrograms);
  EXPECT_EQ(compiled->num_specializations(), 10u);
  // 10 captures (each its call's run), then the second call of each of
  // the 2 ranks past the limit runs the original code.
  EXPECT_EQ(original_calls, 12);
  at::Tensor x = torch::randn({5, 3}), b = torch::randn({3});
  compiled->run({x, b});  // a new size of a program built: compiled (a capture), no new program
  EXPECT_EQ(original_calls, 13);
  compiled->run({x, b});
  EXPECT_EQ(original_calls, 13);
  // A rank past the limit keeps running the original code, without capturing again.
  at::Tensor x10 = torch::randn(std::vector<int64_t>(10, 2)), b10 = torch::randn({2});
  compiled->run({x10, b10});
  compiled->run({x10, b10});
  EXPECT_EQ(original_calls, 15);
}

TEST(Compile, TheLeastRecentlyUsedSpecializationIsDropped) {
  int original_calls = 0;
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        ++original_calls;
        return in[0].toTensor().sin() + 1.0;
      },
      fresh_options());
  const int64_t n = fx::CompiledModule::kMaxSpecializations;
  for (int64_t i = 2; i < n + 4; ++i) compiled->run({torch::randn({i})});
  EXPECT_EQ(compiled->num_specializations(), static_cast<size_t>(n));
  EXPECT_EQ(compiled->num_programs(), 2u);  // static, then dynamic
  EXPECT_EQ(original_calls, n + 2);
  compiled->run({torch::randn({n + 3})});  // kept
  EXPECT_EQ(original_calls, n + 2);
  at::Tensor x = torch::randn({2});  // dropped: captured again
  expect_close(run_compiled(*compiled, {x}).toTensor(), x.sin() + 1.0);
  EXPECT_EQ(original_calls, n + 3);
}

TEST(Compile, TheSameProgramIsBuiltOnce) {
  fx::CompileOptions options = fresh_options();
  auto fn = [](const std::vector<c10::IValue>& in) { return torch::silu(in[0].toTensor()) * 3.0; };
  at::Tensor x = torch::randn({7, 9});
  auto first = fx::compile(fn, options);
  first->run({x});
  auto second = fx::compile(fn, options);
  expect_close(run_compiled(*second, {x}).toTensor(), torch::silu(x) * 3.0);
  EXPECT_TRUE(second->report().cache_hit);
  EXPECT_EQ(second->report().library, first->report().library);
  EXPECT_TRUE(std::filesystem::exists(first->report().library));
}

// The call that compiles runs the code once, while capturing it: a buffer
// it updates (batch norm's running statistics in training) and an input it
// changes in place are updated once per call, as eager updates them.
TEST(Compile, TheCallThatCompilesRunsTheCodeOnce) {
  torch::NoGradGuard no_grad;
  torch::nn::BatchNorm2d bn(4), eager(4);
  auto compiled = fx::compile(
      *bn, [&](const std::vector<c10::IValue>& in) { return c10::IValue(bn->forward(in[0].toTensor())); },
      fresh_options());
  at::Tensor x = torch::randn({2, 4, 5, 5});
  for (int call = 1; call <= 3; ++call) {
    expect_close(compiled->run({x}).toTensor(), eager->forward(x));
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), call);
    expect_close(bn->running_mean, eager->running_mean);
    expect_close(bn->running_var, eager->running_var);
  }
  // Calls 2 and 3 ran the compiled graph, which writes the statistics back.
  EXPECT_THAT(compiled->compiled_graph().graph().to_string(), HasSubstr("torch.ops.aten.copy_.default"));

  auto add_one = fx::compile(
      [](const std::vector<c10::IValue>& in) {
        at::Tensor t = in[0].toTensor();
        t.add_(1.0);
        return c10::IValue(t.exp() * 2.0 - 1.0);
      },
      fresh_options());
  at::Tensor t = torch::zeros({3, 8});
  for (int call = 1; call <= 3; ++call) {
    expect_close(add_one->run({t}).toTensor(), torch::full({3, 8}, std::exp(double(call)) * 2.0 - 1.0));
    expect_close(t, torch::full({3, 8}, double(call)));
  }
  EXPECT_EQ(add_one->report().kernels, 1u);
}

TEST(Compile, GradModeCompilesTheForwardAndTheBackward) {
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); },
      fresh_options());
  at::Tensor b = torch::randn({4});
  for (int call = 0; call < 2; ++call) {
    at::Tensor x = torch::randn({4, 4}, torch::requires_grad());
    at::Tensor xe = x.detach().clone().requires_grad_();
    at::Tensor y = compiled->run({x, b}).toTensor();
    EXPECT_TRUE(y.requires_grad());
    (y * y).sum().backward();
    at::Tensor want = chain(xe, b);
    (want * want).sum().backward();
    expect_close(y, want);
    expect_close(x.grad(), xe.grad());
  }
  EXPECT_EQ(compiled->num_specializations(), 1u);
  EXPECT_GE(compiled->report().kernels, 2u) << "a kernel in the forward and one in the backward";
}

TEST(Compile, MissingCompilerIsAnError) {
  fx::CompileOptions options = fresh_options();
  options.compiler = "/nonexistent/fxcpp-no-compiler";
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return torch::cos(in[0].toTensor()) + 11.0; }, options);
  try {
    compiled->run({torch::randn({3, 97})});
    FAIL() << "compiled without a compiler";
  } catch (const fx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the C++ compiler '/nonexistent/fxcpp-no-compiler' was not found"));
  }
  EXPECT_THROW(compiled->compiled_graph(), fx::Error);
}

TEST(Compile, DebugDirectoryHoldsSourceKernelsAndPhases) {
  fx::CompileOptions options = fresh_options();
  options.debug_dir = options.cache_dir + "_debug";
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return chain(in[0].toTensor(), in[1].toTensor()); }, options);
  compiled->run({torch::randn({6, 10}), torch::randn({10})});
  std::vector<std::string> files;
  for (const auto& dir : std::filesystem::directory_iterator(options.debug_dir))
    for (const auto& f : std::filesystem::directory_iterator(dir))
      files.push_back(f.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"graph.txt", "kernels.txt", "phases.txt", "source.cpp"}));
  std::vector<std::string> phases;
  for (const auto& [name, ms] : compiled->report().phase_ms) phases.push_back(name);
  EXPECT_EQ(phases, (std::vector<std::string>{"capture", "cse", "layout", "decompose", "lower", "schedule",
                                              "codegen", "build", "wrap"}));
}

// The kernels of the compiled branch at `path` (a submodule of the compiled graph).
size_t branch_kernels(const fx::GraphModule& compiled, const std::string& path) {
  auto* branch = dynamic_cast<fx::GraphModule*>(compiled.get_submodule(path));
  return branch ? count_kernel_nodes(*branch) : 0;
}

// Each branch of a cond is compiled as a graph of its own; the compiled
// graph keeps the cond, and one specialization serves both branches.
TEST(Compile, CondBranchesAreCompiledAndThePredicatePicksOneEachCall) {
  torch::NoGradGuard no_grad;
  auto fn = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    return fx::cond(
        x.sum() > 0, [](const fx::Tensors& t) { return fx::Tensors{torch::sigmoid(t[0]) * 2.0 + 1.0}; },
        [](const fx::Tensors& t) { return fx::Tensors{torch::tanh(t[0] - 1.0) * t[0]}; }, {x})[0];
  };
  auto compiled = fx::compile(fn, fresh_options());
  at::Tensor pos = torch::rand({8, 20}) + 0.1, neg = -torch::rand({8, 20}) - 0.1;
  expect_close(run_compiled(*compiled, {pos}).toTensor(), torch::sigmoid(pos) * 2.0 + 1.0);
  expect_close(run_compiled(*compiled, {neg}).toTensor(), torch::tanh(neg - 1.0) * neg);
  EXPECT_EQ(compiled->num_specializations(), 1u);
  const fx::GraphModule& gm = compiled->compiled_graph();
  EXPECT_THAT(gm.graph().to_string(), HasSubstr("torch.ops.higher_order.cond"));
  EXPECT_EQ(branch_kernels(gm, "true_graph_0"), 1u);
  EXPECT_EQ(branch_kernels(gm, "false_graph_0"), 1u);
  EXPECT_EQ(compiled->report().kernels, 2u);
}

TEST(Compile, WhileLoopBodyIsCompiled) {
  torch::NoGradGuard no_grad;
  auto fn = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    auto out = fx::while_loop([](const fx::Tensors& c) { return c[0] < 4; },
                              [](const fx::Tensors& c) {
                                return fx::Tensors{c[0] + 1, torch::sigmoid(c[1]) * 0.5 + c[1]};
                              },
                              {in[0].toTensor(), in[1].toTensor()});
    return out[1];
  };
  auto compiled = fx::compile(fn, fresh_options());
  at::Tensor x = torch::randn({5, 17});
  at::Tensor want = x.clone();
  for (int i = 0; i < 4; ++i) want = torch::sigmoid(want) * 0.5 + want;
  expect_close(run_compiled(*compiled, {torch::tensor(0), x}).toTensor(), want);
  const fx::GraphModule& gm = compiled->compiled_graph();
  EXPECT_THAT(gm.graph().to_string(), HasSubstr("torch.ops.higher_order.while_loop"));
  EXPECT_EQ(branch_kernels(gm, "while_loop_body_graph_0"), 1u);
  // Two steps fewer: the loop runs as long as its input says.
  want = x.clone();
  for (int i = 0; i < 2; ++i) want = torch::sigmoid(want) * 0.5 + want;
  expect_close(run_compiled(*compiled, {torch::tensor(2), x}).toTensor(), want);
}

}  // namespace

// Empty tensors (no rows, or rows of no elements: a sum over none is 0),
// NaN and inf, and 0-dim tensors compute as eager: the same kernels serve
// sizes with zeros in them.
TEST(Compile, EmptyZeroDimNanAndInfComputeAsEager) {
  auto fn = [](const at::Tensor& x, const at::Tensor& b) {
    at::Tensor y = torch::relu(x * b + 1.0).exp() - 0.5;
    return std::make_tuple(y, torch::softmax(x * 2.0, -1), (x * x).sum(-1, true) + 1.0,
                           (x - 1.0).mean(-1, true) * 2.0);
  };
  auto compiled = fx::compile(
      [&](const std::vector<c10::IValue>& in) {
        auto [a, b, c, d] = fn(in[0].toTensor(), in[1].toTensor());
        return c10::ivalue::Tuple::create({a, b, c, d});
      },
      fresh_options());
  for (auto shape : std::vector<std::vector<int64_t>>{{3, 7}, {0, 5}, {5, 0}, {4, 9}, {2, 0}}) {
    at::Tensor x = torch::randn(shape), b = torch::randn({shape[1]});
    if (x.numel() > 2) {
      x.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
      x.view(-1)[1] = std::numeric_limits<float>::infinity();
    }
    auto got = run_compiled(*compiled, {x, b}).toTupleRef().elements();
    auto [y, s, c, m] = fn(x, b);
    size_t i = 0;
    for (const at::Tensor& want : {y, s, c, m}) {
      const at::Tensor& have = got[i++].toTensor();
      ASSERT_EQ(have.sizes(), want.sizes());
      EXPECT_TRUE(at::allclose(have, want, 1e-5, 1e-6, /*equal_nan=*/true))
          << "shape " << c10::IntArrayRef(shape) << ", output " << i - 1 << ":\n"
          << have << want;
    }
  }
  // y's loop, and one row kernel for the softmax, the sum and the mean
  // (loops over x's rows, fused horizontally).
  EXPECT_EQ(compiled->report().kernels, 2u);
  auto scalar = fx::compile(
      [](const std::vector<c10::IValue>& in) {
        return c10::IValue((in[0].toTensor() * 2.0 + 1.0).sigmoid());
      },
      fresh_options());
  at::Tensor z = torch::tensor(0.3f);
  at::Tensor r = run_compiled(*scalar, {z}).toTensor();
  EXPECT_EQ(r.dim(), 0);
  expect_close(r, (z * 2.0 + 1.0).sigmoid());
  EXPECT_EQ(scalar->report().kernels, 1u);
}

// Numbers, bools and strings among the inputs are part of the guard: the
// graph takes the tensors and has the other values as constants, each
// value a specialization of its own (before, capture refused them).
TEST(Compile, NumberInputsAreConstantsOfTheirSpecialization) {
  auto fn = [](const std::vector<c10::IValue>& in) {
    at::Tensor y = in[0].toTensor() * in[1].toDouble() + static_cast<double>(in[3].toInt());
    return c10::IValue(in[2].toBool() ? torch::relu(y) : torch::tanh(y));
  };
  auto compiled = fx::compile(fn, fresh_options());
  at::Tensor x = torch::randn({5, 9});
  for (const double scale : {2.5, 3.5})
    for (const bool relu : {true, false}) {
      const std::vector<c10::IValue> in{x, scale, relu, int64_t{3}};
      expect_close(run_compiled(*compiled, in).toTensor(), fn(in).toTensor());
      EXPECT_EQ(compiled->report().kernels, 1u);
      size_t placeholders = 0;
      for (fx::Node* n : compiled->compiled_graph().graph().nodes())
        placeholders += n->op() == fx::Op::placeholder;
      EXPECT_EQ(placeholders, 1u);
    }
  EXPECT_EQ(compiled->num_specializations(), 4u);
}
