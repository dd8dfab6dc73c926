// fx::capture with CaptureOptions::dynamic_shapes: symbolic sizes, what
// the graph records about its inputs, and the errors for code whose sizes
// cannot vary. (conformance_test.cpp compares the graphs with make_fx's.)
#include <fx/capture.h>
#include <fx/control_flow.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/value.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>

namespace {

using Inputs = std::vector<c10::IValue>;

fx::CaptureOptions dynamic(std::vector<std::map<int64_t, fx::Dim>> shapes,
                           std::vector<std::string> names = {"x"}) {
  fx::CaptureOptions options;
  options.input_names = std::move(names);
  options.dynamic_shapes = std::move(shapes);
  return options;
}

// The TraceError's message, which must contain every part of `parts`.
template <class Error = fx::TraceError>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(DynamicShapes, TheGraphRunsAtOtherSizes) {
  auto fn = [](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    const int64_t b = x.size(0), t = x.size(1);
    at::Tensor scores = x.view({b, t, 2, 4}).transpose(1, 2).reshape({b * 2, t, 4});
    return scores.softmax(-1).sum(1).view({b, 8}) + torch::zeros({b, 1});
  };
  auto gm = fx::capture(fn, {torch::randn({3, 5, 8})}, dynamic({{{0, fx::Dim{}}, {1, fx::Dim{}}}}));
  for (auto sizes : {std::vector<int64_t>{3, 5, 8}, {2, 2, 8}, {7, 3, 8}, {4, 9, 8}}) {
    at::Tensor x = torch::randn(sizes);
    EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), fn({x}).toTensor())) << sizes;
  }
}

TEST(DynamicShapes, InputsRecordTheirSymbols) {
  auto gm = fx::capture([](const Inputs& in) -> c10::IValue { return in[0].toTensor() + in[1].toTensor(); },
                        {torch::randn({4, 3}), torch::randn({4, 3})},
                        dynamic({{{0, fx::Dim{"batch"}}}, {{0, fx::Dim{"batch"}}}}, {"x", "y"}));
  std::vector<std::vector<std::string>> sizes;
  for (fx::Node* n : gm->graph().nodes())
    if (n->op() == fx::Op::placeholder)
      sizes.push_back(*n->meta().get<std::vector<std::string>>("sym_sizes"));
  EXPECT_EQ(sizes, (std::vector<std::vector<std::string>>{{"s0", "3"}, {"s0", "3"}}));
  EXPECT_TRUE(
      torch::equal(gm->run({torch::ones({6, 3}), torch::ones({6, 3})}).toTensor(), torch::full({6, 3}, 2.)));
}

TEST(DynamicShapes, AnIntegerOutputIsASize) {
  auto gm = fx::capture(
      [](const Inputs& in) -> c10::IValue {
        at::Tensor x = in[0].toTensor();
        return c10::ivalue::Tuple::create({x.relu(), c10::IValue(x.size(0) * 3 + 1)});
      },
      {torch::randn({5, 2})}, dynamic({{{0, fx::Dim{}}}}));
  EXPECT_NE(gm->code().find("mul = sym_size_int * 3"), std::string::npos) << gm->code();
  EXPECT_NE(gm->code().find("add = mul + 1"), std::string::npos) << gm->code();
  EXPECT_EQ(gm->run({torch::randn({7, 2})}).toTupleRef().elements()[1].toInt(), 22);
}

TEST(DynamicShapes, BuffersAreUpdatedAsByOneCapture) {
  torch::manual_seed(0);
  torch::nn::BatchNorm1d once(4), dynamic_bn(4);
  at::Tensor x = torch::randn({6, 4});
  auto fn = [](torch::nn::BatchNorm1d& bn) {
    return [&bn](const Inputs& in) -> c10::IValue { return bn->forward(in[0].toTensor()); };
  };
  fx::capture(*once, fn(once), {x.clone()});
  fx::capture(*dynamic_bn, fn(dynamic_bn), {x.clone()}, dynamic({{{0, fx::Dim{}}}}));
  EXPECT_TRUE(torch::allclose(once->running_mean, dynamic_bn->running_mean));
  EXPECT_TRUE(torch::allclose(once->running_var, dynamic_bn->running_var));
  EXPECT_EQ(once->num_batches_tracked.item<int64_t>(), dynamic_bn->num_batches_tracked.item<int64_t>());
}

TEST(DynamicShapes, TheInputsAreLeftAsOneCaptureLeavesThem) {
  at::Tensor x = torch::zeros({4, 2}), y = torch::zeros({3});
  fx::CaptureOptions options = dynamic({{{0, fx::Dim{}}}}, {"x", "y"});
  options.functionalize = true;
  fx::capture(
      [](const Inputs& in) -> c10::IValue {
        in[0].toTensor().add_(1);
        in[1].toTensor().add_(1);
        return in[0].toTensor().sum();
      },
      {x, y}, options);
  EXPECT_TRUE(torch::equal(x, torch::ones({4, 2})));
  EXPECT_TRUE(torch::equal(y, torch::ones({3})));
}

TEST(DynamicShapes, ATrainingStepWithADynamicBatch) {
  torch::manual_seed(0);
  torch::nn::Linear lin(3, 2);
  auto step = [&](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    at::Tensor loss = lin->forward(x.view({x.size(0), 3})).pow(2).sum();
    loss.backward();
    return loss;
  };
  auto gm = fx::capture_training_step(*lin, step, {torch::randn({4, 3})}, dynamic({{{0, fx::Dim{}}}}));
  at::Tensor x = torch::randn({9, 3});
  auto out = gm->run({x}).toTupleRef().elements();
  at::Tensor want = lin->forward(x).pow(2).sum();
  EXPECT_TRUE(torch::allclose(out[0].toTensor(), want));
  EXPECT_FALSE(lin->weight.grad().defined());
}

TEST(DynamicShapes, ABranchOnASizeNamesTheNodeAndTheDimension) {
  expect_error(
      [] {
        fx::capture(
            [](const Inputs& in) -> c10::IValue {
              at::Tensor x = in[0].toTensor();
              return x.size(0) < 10 ? x.sin() : x.cos();
            },
            {torch::randn({6, 2})}, dynamic({{{0, fx::Dim{}}}}));
      },
      {"dimension 0 of input 'x' (s0) at 12 instead of 6", "node 'sin'", "cos", "another path"});
}

// Sizes inside the branches of cond and while_loop are read from the
// branch's own operands (sym_size.int(arg0_1, 0)), as torch.export writes
// them: a branch of one capture serves every size.
TEST(DynamicShapes, SizesInsideBranchesAreSymbolic) {
  auto fn = [](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    at::Tensor y = fx::cond(
        x.sum() > 0, [](const fx::Tensors& a) { return fx::Tensors{a[0] * a[0].size(0)}; },
        [](const fx::Tensors& a) {
          const int64_t b = a[0].size(0);
          return fx::Tensors{a[0].reshape({b * 3}).cos().view({b, 3})};
        },
        {x})[0];
    return fx::while_loop([](const fx::Tensors& c) { return c[0] < 3; },
                          [](const fx::Tensors& c) {
                            return fx::Tensors{c[0] + 1, c[1] + c[1].size(0)};
                          },
                          {torch::tensor(0), y})[1];
  };
  auto gm = fx::capture(fn, {torch::randn({4, 3})}, dynamic({{{0, fx::Dim{"b", 2, 64}}}}));
  auto code = [&](const char* branch) {
    return dynamic_cast<fx::GraphModule*>(gm->get_submodule(branch))->code();
  };
  EXPECT_NE(code("true_graph_0")
                .find("sym_size_int = torch.ops.aten.sym_size.int(arg0_1, 0)\n"
                      "    mul = torch.ops.aten.mul.Scalar(arg0_1, sym_size_int)"),
            std::string::npos)
      << code("true_graph_0");
  EXPECT_NE(code("false_graph_0").find("mul = sym_size_int * 3"), std::string::npos) << code("false_graph_0");
  EXPECT_NE(code("while_loop_body_graph_0").find("torch.ops.aten.sym_size.int(arg1_1, 0)"), std::string::npos)
      << code("while_loop_body_graph_0");
  for (int64_t b : {4, 7, 33})
    for (double sign : {1., -1.}) {
      at::Tensor x = torch::rand({b, 3}) * sign;
      EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), fn({x}).toTensor())) << b << " " << sign;
    }
}

TEST(DynamicShapes, AFloatComputedFromASizeIsRefused) {
  expect_error(
      [] {
        fx::capture(
            [](const Inputs& in) -> c10::IValue {
              at::Tensor x = in[0].toTensor();
              return x * (1.0 / static_cast<double>(x.size(0)));
            },
            {torch::randn({6, 2})}, dynamic({{{0, fx::Dim{}}}}));
      },
      {"float argument args[1] of node 'mul'", "not floats", "leave the dimension static"});
}

TEST(DynamicShapes, DimensionsThatMustBeEqualNeedOneName) {
  expect_error(
      [] {
        fx::capture([](const Inputs& in) -> c10::IValue { return in[0].toTensor() + in[1].toTensor(); },
                    {torch::randn({4, 3}), torch::randn({4, 3})},
                    dynamic({{{0, fx::Dim{}}}, {{0, fx::Dim{}}}}, {"x", "y"}));
      },
      {"the function fails", "dimension 0 of input 'x' (s0) at 8 instead of 4", "the same Dim name"});
}

TEST(DynamicShapes, ASizeFxcppCannotExpressIsNamed) {
  expect_error(
      [] {
        fx::capture(
            [](const Inputs& in) -> c10::IValue {
              const int64_t b = in[0].toTensor().size(0);
              return torch::zeros({b * b + 1});
            },
            {torch::randn({3})}, dynamic({{{0, fx::Dim{}}}}));
      },
      {"args[0][0] of node 'zeros' is 10, 37, 82", "s0 = 3, 6, 9", "leave the dimension static"});
  // Integers near the ends of int64 are compared without overflow (UBSan).
  expect_error(
      [] {
        fx::capture(
            [](const Inputs& in) -> c10::IValue {
              const at::Tensor x = in[0].toTensor();
              return x.slice(0, std::numeric_limits<int64_t>::min() + 2 * x.size(0),
                             std::numeric_limits<int64_t>::max() - x.size(0));
            },
            {torch::randn({3})}, dynamic({{{0, fx::Dim{}}}}));
      },
      {"args[2] of node 'slice_1'", "leave the dimension static"});
}

TEST(DynamicShapes, ATensorMadeOutsideTheCaptureThatFollowsASize) {
  // Masks made before the capture, one per size: constants of the graph.
  std::map<int64_t, at::Tensor> masks;
  for (int64_t n : {5, 10, 15}) masks[n] = torch::ones({n});
  expect_error(
      [&] {
        fx::capture(
            [&](const Inputs& in) -> c10::IValue {
              at::Tensor x = in[0].toTensor();
              return x * masks.at(x.size(0));
            },
            {torch::randn({5})}, dynamic({{{0, fx::Dim{}}}}));
      },
      {"tensor attribute '_tensor_constant0'", "follows a dynamic size"});
}

TEST(DynamicShapes, BadOptionsNameTheInputAndDimension) {
  auto fn = [](const Inputs& in) -> c10::IValue { return in[0].toTensor().relu(); };
  auto capture = [&](const Inputs& inputs, std::vector<std::map<int64_t, fx::Dim>> shapes) {
    return [=] { fx::capture(fn, inputs, dynamic(shapes, {"x", "y"})); };
  };
  const at::Tensor x = torch::randn({4, 3});
  expect_error<fx::Error>(capture({x, x}, {{{2, fx::Dim{}}}}),
                          {"dimension 2 of input 0 ('x')", "has 2 dimensions"});
  expect_error<fx::Error>(capture({x, x}, {{}, {}, {{0, fx::Dim{}}}}), {"3 entries for 2 example inputs"});
  expect_error<fx::Error>(capture({x, c10::IValue(3)}, {{}, {{0, fx::Dim{}}}}),
                          {"input 1 ('y'), which is a Int", "only tensor inputs"});
  expect_error<fx::Error>(capture({torch::randn({1, 3}), x}, {{{0, fx::Dim{"b", 0}}}}), {"a size of 0 or 1"});
  expect_error<fx::Error>(capture({x, x}, {{{0, fx::Dim{"b", 5, 9}}}}),
                          {"is 4 in the example, outside its Dim's range [5, 9]"});
  expect_error<fx::Error>(capture({x, x}, {{{0, fx::Dim{"b", 4, 4}}}}),
                          {"allows no size but the example's 4"});
  expect_error<fx::Error>(capture({x, torch::randn({5})}, {{{0, fx::Dim{"b"}}}, {{0, fx::Dim{"b"}}}}),
                          {"are both Dim 'b' but are 5 and 4"});
  expect_error<fx::Error>(capture({x, x}, {{{0, fx::Dim{}}, {-2, fx::Dim{}}}}),
                          {"marks dimension 0 of input 0 ('x') twice"});
}

TEST(DynamicShapes, ARangeBoundsTheOtherSizes) {
  // Only 4..5 allowed: the other captures use 5, and the graph still serves both.
  auto gm = fx::capture(
      [](const Inputs& in) -> c10::IValue {
        return in[0].toTensor().view({-1, 2});
      },
      {torch::randn({4, 2})}, dynamic({{{0, fx::Dim{"b", 4, 5}}}}));
  EXPECT_EQ(gm->run({torch::randn({5, 2})}).toTensor().sizes(), (std::vector<int64_t>{5, 2}));
}

// Real models: one capture serves other batches and image sizes.
TEST(DynamicShapes, Resnet18WithDynamicBatchHeightAndWidth) {
  torch::manual_seed(0);
  auto m = fx::models::resnet18(10);
  m->eval();
  auto gm = fx::capture(*m, {torch::randn({2, 3, 64, 64})},
                        dynamic({{{0, fx::Dim{}}, {2, fx::Dim{"h", 32, 512}}, {3, fx::Dim{"w", 32, 512}}}}));
  for (auto sizes : {std::vector<int64_t>{3, 3, 96, 80}, {4, 3, 33, 47}}) {
    at::Tensor x = torch::randn(sizes);
    at::Tensor want = m->call({fx::Value(x)}).tensor();
    EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want, 1e-4, 1e-5)) << sizes;
  }
}

TEST(DynamicShapes, VisionTransformerWithADynamicBatch) {
  torch::manual_seed(0);
  fx::models::VisionTransformer vit(32, 8, 2, 2, 16, 32, 0.0, 0.0, 10);
  vit.eval();
  auto gm = fx::capture(vit, {torch::randn({2, 3, 32, 32})}, dynamic({{{0, fx::Dim{}}}}));
  at::Tensor x = torch::randn({5, 3, 32, 32});
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), vit.call({fx::Value(x)}).tensor(), 1e-4, 1e-5));
}

TEST(DynamicShapes, MaskedAttentionWithDynamicBatchAndLength) {
  torch::manual_seed(0);
  torch::nn::Linear qkv(16, 48), proj(16, 16);
  const at::Tensor mask = torch::ones({64, 64}).tril();  // up to 64 positions, as a GPT block's buffer
  auto block = [&](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), H = 2;
    auto parts = qkv->forward(x).view({B, T, 3, H, C / H}).permute({2, 0, 3, 1, 4}).unbind(0);
    at::Tensor att = torch::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(double(C / H));
    att = att.masked_fill(mask.slice(0, 0, T).slice(1, 0, T) == 0, -INFINITY).softmax(-1);
    return proj->forward(torch::matmul(att, parts[2]).transpose(1, 2).reshape({B, T, C}));
  };
  auto gm = fx::capture(block, {torch::randn({2, 5, 16})},
                        dynamic({{{0, fx::Dim{"batch"}}, {1, fx::Dim{"length", 2, 64}}}}));
  EXPECT_NE(gm->code().find("sym_size_int_1 = torch.ops.aten.sym_size.int(x_1, 1)"), std::string::npos)
      << gm->code();
  for (auto sizes : {std::vector<int64_t>{3, 7, 16}, {2, 64, 16}, {6, 2, 16}}) {
    at::Tensor x = torch::randn(sizes);
    EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), block({x}).toTensor(), 1e-4, 1e-5)) << sizes;
  }
}

}  // namespace
