// The programs of programs.py, written in C++ and captured with fx::capture:
// each graph's text and code goes into actual.json, which compare.py checks
// against make_fx's (expected.json); and each captured graph, run, gives
// what the program gives eagerly.
#include <fx/capture.h>
#include <fx/control_flow.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/nn.h>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <map>

namespace {

using Inputs = std::vector<c10::IValue>;

nlohmann::json& actual() {
  static nlohmann::json j = nlohmann::json::object();
  return j;
}

struct WriteActual : testing::Environment {
  void TearDown() override { std::ofstream(FXCPP_CAPTURE_ACTUAL) << actual().dump(1); }
};
const auto* const write_actual = testing::AddGlobalTestEnvironment(new WriteActual);

// Flattens tensors out of nested tuples/lists, in order.
void flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor())
    out.push_back(v.toTensor());
  else if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  else if (v.isList())
    for (const auto& e : v.toListRef()) flatten(e, out);
}

void expect_same_values(const c10::IValue& got, const c10::IValue& want) {
  std::vector<at::Tensor> g, w;
  flatten(got, g);
  flatten(want, w);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_TRUE(torch::allclose(g[i], w[i], 1e-4, 1e-5)) << "output " << i;
}

Inputs clones(const Inputs& inputs) {
  Inputs out;
  for (const auto& v : inputs) out.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  return out;
}

// Captures, records the text, and checks the graph computes what fn does:
// the same outputs, and the same updates of its inputs (functionalize).
void check(const std::string& name, torch::nn::Module* root, const fx::CaptureFunction& fn,
           const Inputs& inputs, bool functionalize = false) {
  torch::manual_seed(0);
  fx::CaptureOptions options;
  options.input_names = {"x", "y"};
  options.input_names.resize(inputs.size());
  options.functionalize = functionalize;
  auto gm = root ? fx::capture(*root, fn, clones(inputs), options) : fx::capture(fn, clones(inputs), options);
  nlohmann::json subgraphs = nlohmann::json::object();
  for (const auto& child : gm->named_children())
    if (auto* g = dynamic_cast<fx::GraphModule*>(child.value().get())) subgraphs[child.key()] = g->code();
  actual()[name] = {{"graph", gm->graph().to_string()}, {"code", gm->code()}, {"subgraphs", subgraphs}};
  // The same random numbers (dropout) for both runs.
  Inputs eager_inputs = clones(inputs), graph_inputs = clones(inputs);
  torch::manual_seed(1);
  c10::IValue want = fn(eager_inputs);
  torch::manual_seed(1);
  expect_same_values(gm->run(graph_inputs), want);
  expect_same_values(c10::ivalue::Tuple::create(graph_inputs), c10::ivalue::Tuple::create(eager_inputs));
}

c10::IValue tuple(std::vector<c10::IValue> items) { return c10::ivalue::Tuple::create(std::move(items)); }

c10::IValue loss_and_grads(torch::nn::Module& m, const at::Tensor& loss) {
  auto grads = torch::autograd::grad({loss}, m.parameters());
  return tuple({loss, c10::List<at::Tensor>(grads)});
}

torch::nn::Sequential mlp() {
  return torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
}

TEST(CaptureConformance, Functional) {
  check("functional", nullptr,
        [](const Inputs& in) -> c10::IValue {
          auto x = in[0].toTensor(), y = in[1].toTensor();
          auto z = torch::add(x, y, 2);
          auto w = torch::cat({z, x}, 1).softmax(-1);
          return tuple({w * y.sum(), c10::List<at::Tensor>({z.view({-1}), torch::tanh(z).transpose(0, 1)})});
        },
        {torch::randn({2, 3}), torch::randn({2, 3})});
}

TEST(CaptureConformance, StockMlpForward) {
  auto m = mlp();
  check("mlp_forward", m.ptr().get(),
        [&](const Inputs& in) -> c10::IValue { return m->forward(in[0].toTensor()); },
        {torch::randn({3, 8})});
}

TEST(CaptureConformance, StockMlpGrad) {
  auto m = mlp();
  check(
      "mlp_grad", m.ptr().get(),
      [&](const Inputs& in) -> c10::IValue { return loss_and_grads(*m, m->forward(in[0].toTensor()).sum()); },
      {torch::randn({3, 8})});
}

c10::IValue run_module(fx::Module& m, const Inputs& in) {
  return m.call(std::vector<fx::Value>(in.begin(), in.end())).ivalue();
}

TEST(CaptureConformance, Resnet18Eval) {
  auto m = fx::models::resnet18();
  m->eval();
  check("resnet18_eval", m.get(), [&](const Inputs& in) { return run_module(*m, in); },
        {torch::randn({1, 3, 64, 64})});
}

TEST(CaptureConformance, Resnet18Grad) {
  auto m = fx::models::resnet18();
  m->train();
  check("resnet18_grad", m.get(),
        [&](const Inputs& in) { return loss_and_grads(*m, run_module(*m, in).toTensor().sum()); },
        {torch::randn({2, 3, 64, 64})});
}

TEST(CaptureConformance, MobilenetV2Eval) {
  auto m = fx::models::mobilenet_v2();
  m->eval();
  check("mobilenet_v2_eval", m.get(), [&](const Inputs& in) { return run_module(*m, in); },
        {torch::randn({1, 3, 64, 64})});
}

TEST(CaptureConformance, MobilenetV2Grad) {
  auto m = fx::models::mobilenet_v2();
  m->train();
  check("mobilenet_v2_grad", m.get(),
        [&](const Inputs& in) { return loss_and_grads(*m, run_module(*m, in).toTensor().sum()); },
        {torch::randn({2, 3, 32, 32})});
}

TEST(CaptureConformance, TransformerEncoderLayerEval) {
  auto m =
      std::make_shared<fx::nn::TransformerEncoderLayer>(16, 4, 32, 0.0, "relu", 1e-5, /*batch_first=*/true);
  m->eval();
  check("encoder_layer_eval", m.get(), [&](const Inputs& in) { return run_module(*m, in); },
        {torch::randn({2, 5, 16})});
}

TEST(CaptureConformance, TransformerEncoderLayerGrad) {
  auto m =
      std::make_shared<fx::nn::TransformerEncoderLayer>(16, 4, 32, 0.0, "relu", 1e-5, /*batch_first=*/true);
  m->train();
  check("encoder_layer_grad", m.get(),
        [&](const Inputs& in) { return loss_and_grads(*m, run_module(*m, in).toTensor().sum()); },
        {torch::randn({2, 5, 16})});
}

TEST(CaptureConformance, LstmGrad) {
  auto m = std::make_shared<fx::nn::LSTM>(8, 16, 1, true, /*batch_first=*/true);
  check("lstm_grad", m.get(),
        [&](const Inputs& in) {
          auto out = run_module(*m, in).toTupleRef().elements()[0].toTensor();
          return loss_and_grads(*m, out.sum());
        },
        {torch::randn({2, 5, 8})});
}

TEST(CaptureConformance, LstmForward) {
  auto m = std::make_shared<fx::nn::LSTM>(8, 16, 1, true, /*batch_first=*/true);
  check("lstm_forward", m.get(),
        [&](const Inputs& in) -> c10::IValue { return run_module(*m, in).toTupleRef().elements()[0]; },
        {torch::randn({2, 5, 8})});
}

// In-place updates of views under functionalize (make_fx(functionalize(f))).
void check_functionalized(const std::string& name, const fx::CaptureFunction& fn) {
  check(name, nullptr, fn, {torch::randn({4, 3})}, /*functionalize=*/true);
}

TEST(CaptureConformance, UpdateThroughASelect) {
  check_functionalized("update_through_select", [](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor() * 2;
    y.select(0, 0).add_(1);
    return y;
  });
}

TEST(CaptureConformance, UpdateOfAnInputThroughAView) {
  check_functionalized("update_input_through_view", [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    x.view({-1}).mul_(2);
    return x + 1;
  });
}

TEST(CaptureConformance, ViewReadAfterItsBaseChanged) {
  check_functionalized("view_after_base_update", [](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor() * 1;
    y.add_(1);
    auto z = y[0];
    y.mul_(3);
    return z;
  });
}

TEST(CaptureConformance, UpdatesThroughSplitAndNestedViews) {
  check_functionalized("split_and_nested_views", [](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor().clone();
    auto parts = y.split(2);
    parts[1].zero_();
    y.unsqueeze(0).squeeze(0).mul_(2);
    return y;
  });
}

TEST(CaptureConformance, ViewOfAnUpdatedViewIsRead) {
  check_functionalized("read_updated_view", [](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor().clone();
    auto a = y[0];
    a.add_(1);
    return tuple({a * 2, y});
  });
}

TEST(CaptureConformance, OutputAliasOfAnUpdatedBase) {
  check_functionalized("output_alias_of_updated_base", [](const Inputs& in) -> c10::IValue {
    using torch::indexing::Slice;
    auto y = in[0].toTensor().clone();
    auto a = y.transpose(0, 1);
    // Python's a[1:] slices to INT64_MAX; C++'s Slice(1) stops at SymInt's
    // largest int (2^62 - 1) since 2.x: the stop is spelled out to be the
    // same program.
    a.index({Slice(1, std::numeric_limits<int64_t>::max())}).add_(1);
    return tuple({y, a});
  });
}

// fx::cond and fx::while_loop: the branches captured as make_fx captures torch.cond's.
TEST(CaptureConformance, CondOneOutput) {
  check("cond_one_output", nullptr,
        [](const Inputs& in) -> c10::IValue {
          at::Tensor x = in[0].toTensor();
          return fx::cond(
              x.sum() > 0, [](const fx::Tensors& a) { return fx::Tensors{a[0].sin()}; },
              [](const fx::Tensors& a) { return fx::Tensors{a[0].cos() + 1}; }, {x})[0];
        },
        {torch::randn({3, 4})});
}

TEST(CaptureConformance, CondTwoOutputs) {
  check("cond_two_outputs", nullptr,
        [](const Inputs& in) -> c10::IValue {
          at::Tensor x = in[0].toTensor(), y = in[1].toTensor();
          at::Tensor mx = x.mean(), my = y.mean();  // in Python's order (g++ evaluates `<` right to left)
          auto out = fx::cond(
              mx < my,
              [](const fx::Tensors& a) {
                return fx::Tensors{a[0] + a[1], a[0] * a[1]};
              },
              [](const fx::Tensors& a) {
                return fx::Tensors{a[0] - a[1], a[0] / a[1]};
              },
              {x, y});
          return tuple({out[0].relu(), out[1]});
        },
        {torch::randn({3, 4}), torch::randn({3, 4})});
}

TEST(CaptureConformance, WhileLoopCounter) {
  check("while_loop_counter", nullptr,
        [](const Inputs& in) -> c10::IValue {
          auto out = fx::while_loop([](const fx::Tensors& c) { return c[0] < 5; },
                                    [](const fx::Tensors& c) {
                                      return fx::Tensors{c[0] + 1, c[1] * 2};
                                    },
                                    {in[0].toTensor(), in[1].toTensor()});
          return tuple({out[0], out[1].sum()});
        },
        {torch::tensor(0), torch::randn({3})});
}

// Dynamic dimensions: captured once with options.dynamic_shapes, compared
// with make_fx(tracing_mode="symbolic"), and run at the example sizes and at
// `other_sizes` (other inputs for the same program) against the code itself.
void check_dynamic(const std::string& name, torch::nn::Module* root, const fx::CaptureFunction& fn,
                   std::vector<std::string> input_names, const Inputs& inputs,
                   std::vector<std::map<int64_t, fx::Dim>> dynamic_shapes,
                   const std::vector<Inputs>& other_sizes) {
  fx::CaptureOptions options;
  options.input_names = std::move(input_names);
  options.dynamic_shapes = std::move(dynamic_shapes);
  auto gm = root ? fx::capture(*root, fn, clones(inputs), options) : fx::capture(fn, clones(inputs), options);
  actual()[name] = {
      {"graph", gm->graph().to_string()}, {"code", gm->code()}, {"subgraphs", nlohmann::json::object()}};
  expect_same_values(gm->run(clones(inputs)), fn(clones(inputs)));
  for (const Inputs& other : other_sizes) expect_same_values(gm->run(clones(other)), fn(clones(other)));
}

TEST(CaptureConformance, DynamicBatch) {
  fx::Dim batch{"batch"};
  check_dynamic(
      "dynamic_batch", nullptr,
      [](const Inputs& in) -> c10::IValue {
        at::Tensor x = in[0].toTensor(), w = in[1].toTensor();
        const int64_t b = x.size(0);
        at::Tensor h = torch::nn::functional::linear(x, w).view({b, 2, 4});
        at::Tensor z = torch::tanh(h.reshape({b * 2, 4}));
        return tuple({z, x.slice(0, 0, b - 1), x.unsqueeze(0).expand({3, b, 16})});
      },
      {"x", "w"}, {torch::randn({6, 16}), torch::randn({8, 16})}, {{{0, batch}}},
      {{torch::randn({3, 16}), torch::randn({8, 16})}, {torch::randn({11, 16}), torch::randn({8, 16})}});
}

TEST(CaptureConformance, DynamicConvFlatten) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 3).stride(2));
  check_dynamic("dynamic_conv_flatten", conv.ptr().get(),
                [&](const Inputs& in) -> c10::IValue {
                  at::Tensor c = conv->forward(in[0].toTensor());
                  const int64_t B = c.size(0), C = c.size(1), H = c.size(2), W = c.size(3);
                  return c.view({B, C, H * W}).transpose(1, 2);
                },
                {"x"}, {torch::randn({2, 3, 9, 11})},
                {{{0, fx::Dim{"B"}}, {2, fx::Dim{"H"}}, {3, fx::Dim{"W"}}}},
                // Odd and even sizes: the sizes after the convolution are read, not
                // computed from the input's.
                {{torch::randn({3, 3, 10, 13})}, {torch::randn({5, 3, 7, 8})}});
}

TEST(CaptureConformance, DynamicTwoDims) {
  check_dynamic("dynamic_two_dims", nullptr,
                [](const Inputs& in) -> c10::IValue {
                  at::Tensor y = in[0].toTensor();
                  const int64_t t = y.size(1);
                  return tuple({y.reshape({y.size(0) * t}), y.slice(1, 0, t / 2)});
                },
                {"y"}, {torch::randn({4, 6})}, {{{0, fx::Dim{}}, {1, fx::Dim{}}}},
                {{torch::randn({2, 7})}, {torch::randn({9, 3})}});
}

}  // namespace
