// fx::capture's behaviour on its own: options, errors, training steps, and
// captured graphs as ordinary graphs (passes, files).
#include <fx/capture.h>
#include <fx/error.h>
#include <fx/graph_module_file.h>
#include <fx/passes/cse.h>
#include <fx/passes/dead_code_elimination.h>
#include <fx/passes/shape_prop.h>
#include <fx/value.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <future>
#include <regex>
#include <thread>

namespace {

using Inputs = std::vector<c10::IValue>;

fx::CaptureOptions with(const std::function<void(fx::CaptureOptions&)>& set) {
  fx::CaptureOptions o;
  set(o);
  return o;
}

struct Net : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  Net() {
    fc = register_module("fc", torch::nn::Linear(4, 3));
    bn = register_module("bn", torch::nn::BatchNorm1d(3));
  }
  at::Tensor forward(const at::Tensor& x) { return torch::relu(bn(fc(x))); }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no fx::TraceError";
  return "";
}

TEST(Capture, RecordsOverloadsPlaceholdersAndParametersByPath) {
  auto net = std::make_shared<Net>();
  auto gm = fx::capture(
      *net, [&](const Inputs& in) -> c10::IValue { return net->forward(in[0].toTensor()); },
      {torch::randn({2, 4})}, with([](fx::CaptureOptions& o) { o.input_names = {"x"}; }));
  const std::string& code = gm->code();
  EXPECT_NE(code.find("def forward(self, x_1):"), std::string::npos) << code;
  EXPECT_NE(code.find("fc_weight = self.fc.weight"), std::string::npos) << code;
  EXPECT_NE(code.find("addmm = torch.ops.aten.addmm.default(fc_bias, x_1, t)"), std::string::npos) << code;
  EXPECT_NE(code.find("torch.ops.aten.native_batch_norm.default(addmm, bn_weight, bn_bias, bn_running_mean, "
                      "bn_running_var, True, 0.1, 1e-05)"),
            std::string::npos)
      << code;
  // The graph module shares the module's tensors.
  EXPECT_TRUE(gm->get_tensor("fc.weight").is_same(net->fc->weight));
}

TEST(Capture, RunsLikeTheCode) {
  auto net = std::make_shared<Net>();
  net->eval();
  auto x = torch::randn({5, 4});
  auto gm =
      fx::capture(*net, [&](const Inputs& in) -> c10::IValue { return net->forward(in[0].toTensor()); }, {x});
  auto y = torch::randn({7, 4});
  EXPECT_TRUE(torch::allclose(gm->run({y}).toTensor(), net->forward(y)));
  // Every node bound to a tensor has its tensor_meta, as after shape_prop;
  // seen below autograd, as make_fx sees them: requires_grad is false.
  torch::NoGradGuard no_grad;
  fx::Node* result = gm->graph().output_node()->args()[0].node();
  ASSERT_NE(result, nullptr);
  const auto* meta = result->meta().get<fx::passes::TensorMetadata>("tensor_meta");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(*meta, fx::passes::extract_tensor_metadata(net->forward(x)));
}

TEST(Capture, TensorsFromOutsideBecomeConstants) {
  auto w = torch::randn({3, 3}, torch::requires_grad());
  auto c = torch::randn({3});
  auto gm = fx::capture([&](const Inputs& in) -> c10::IValue { return in[0].toTensor().matmul(w) + c; },
                        {torch::randn({2, 3})});
  EXPECT_NE(gm->code().find("_param_constant0 = self._param_constant0"), std::string::npos) << gm->code();
  EXPECT_NE(gm->code().find("_tensor_constant0 = self._tensor_constant0"), std::string::npos) << gm->code();
}

TEST(Capture, DecomposeFalseKeepsCompositeOperators) {
  auto f = [](const Inputs& in) -> c10::IValue { return torch::matmul(in[0].toTensor(), in[1].toTensor()); };
  Inputs inputs{torch::randn({2, 3}), torch::randn({3, 4})};
  EXPECT_NE(fx::capture(f, inputs)->code().find("torch.ops.aten.mm.default(arg0_1, arg1_1)"),
            std::string::npos);
  EXPECT_NE(fx::capture(f, inputs, with([](fx::CaptureOptions& o) { o.decompose = false; }))
                ->code()
                .find("torch.ops.aten.matmul.default"),
            std::string::npos);
}

TEST(Capture, DecomposeFalseRefusesTheCopiesAutogradSavesUnseen) {
  // hardtanh_ needs its input for the backward: autograd clones it first,
  // below the capture when decompose is off.
  auto w = torch::randn({3}, torch::requires_grad());
  auto step = [&](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor() * w;
    torch::hardtanh_(y);
    return torch::autograd::grad({y.sum()}, {w})[0];
  };
  std::string msg = message_of(
      [&] { fx::capture(step, {torch::randn({3})}, with([](fx::CaptureOptions& o) { o.decompose = false; })); });
  EXPECT_NE(msg.find("a tensor made during the capture by code the capture did not see is used"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Capture backward with decompose on"), std::string::npos) << msg;

  auto gm = fx::capture(step, {torch::randn({3})});
  EXPECT_NE(gm->code().find("torch.ops.aten.clone.default"), std::string::npos) << gm->code();
  auto x = torch::randn({3}) * 2;
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), step({x}).toTensor()));
}

TEST(Capture, AutogradCopiesAndDetachAreAliasesAsInMakeFx) {
  // Autograd saves relu's output for the backward as a copy and unpacks it
  // there as another; make_fx sees both (through its dispatch mode) and an
  // explicit detach as aten.alias, and so does capture.
  auto w = torch::randn({3}, torch::requires_grad());
  auto step = [&](const Inputs& in) -> c10::IValue {
    auto y = torch::relu(in[0].toTensor() * w);
    auto g = torch::autograd::grad({y.sum()}, {w})[0];
    return c10::ivalue::Tuple::create({g, y.detach()});
  };
  auto gm = fx::capture(step, {torch::randn({3})});
  const std::string code = gm->code();
  EXPECT_NE(code.find("alias = torch.ops.aten.alias.default(relu)"), std::string::npos) << code;
  EXPECT_NE(code.find("alias_1 = torch.ops.aten.alias.default(alias)"), std::string::npos) << code;
  EXPECT_NE(code.find("torch.ops.aten.threshold_backward.default(expand, alias_1, 0)"), std::string::npos) << code;
  EXPECT_NE(code.find("alias_2 = torch.ops.aten.alias.default(relu)"), std::string::npos) << code;
  EXPECT_EQ(code.find("detach"), std::string::npos) << code;
  auto x = torch::randn({3});
  auto got = gm->run({x}).toTupleRef().elements();
  auto want = step({x}).toTupleRef().elements();
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(torch::allclose(got[i].toTensor(), want[i].toTensor())) << i;
  // The capture's entry on c10's dispatch mode stack is gone afterwards,
  // also when the function throws.
  EXPECT_EQ(c10::impl::TorchDispatchModeTLS::stack_len(), 0);
  EXPECT_THROW(fx::capture([](const Inputs&) -> c10::IValue { throw std::runtime_error("no"); }, {}),
               fx::TraceError);
  EXPECT_EQ(c10::impl::TorchDispatchModeTLS::stack_len(), 0);
  EXPECT_FALSE(c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python));
}

TEST(Capture, DataDependentOperatorsAreRefusedByName) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    return x.sum().item<float>() > 0 ? x : -x;
  };
  std::string msg = message_of([&] { fx::capture(f, {torch::randn({3})}); });
  EXPECT_NE(msg.find("aten::_local_scalar_dense reads tensor data"), std::string::npos) << msg;
  EXPECT_NE(msg.find("allow_data_dependent"), std::string::npos) << msg;
  auto nz = [](const Inputs& in) -> c10::IValue { return torch::nonzero(in[0].toTensor()); };
  EXPECT_NE(message_of([&] { fx::capture(nz, {torch::randn({3})}); }).find("aten::nonzero"),
            std::string::npos);
  // Allowed: recorded as run, and the branch taken is the graph.
  auto gm =
      fx::capture(f, {torch::ones({3})}, with([](fx::CaptureOptions& o) { o.allow_data_dependent = true; }));
  EXPECT_NE(gm->code().find("_local_scalar_dense"), std::string::npos) << gm->code();
}

TEST(Capture, InPlaceUpdateOfAnInputIsRefusedUnlessFunctionalized) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    x.add_(1);
    auto y = x * x;
    y.relu_();
    return y;
  };
  std::string msg = message_of([&] { fx::capture(f, {torch::randn({3})}); });
  EXPECT_NE(msg.find("aten::add_.Scalar updates input 'arg0_1' in place"), std::string::npos) << msg;
  EXPECT_NE(msg.find("functionalize"), std::string::npos) << msg;

  auto x = torch::randn({3});
  auto gm = fx::capture(f, {x.clone()}, with([](fx::CaptureOptions& o) { o.functionalize = true; }));
  EXPECT_EQ(gm->code(),
            "\n\n\ndef forward(self, arg0_1):\n"
            "    add = torch.ops.aten.add.Scalar(arg0_1, 1)\n"
            "    mul = torch.ops.aten.mul.Tensor(add, add)\n"
            "    relu = torch.ops.aten.relu.default(mul);  mul = None\n"
            "    copy_ = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None\n"
            "    return relu\n    ");
  // Running it updates the input as the code does.
  auto a = x.clone(), b = x.clone();
  auto want = f({a}).toTensor();
  auto got = gm->run({b}).toTensor();
  EXPECT_TRUE(torch::allclose(got, want));
  EXPECT_TRUE(torch::allclose(a, b));
}

// The in-place operators a graph's code calls, but the write-backs (copy_).
std::vector<std::string> in_place_calls(const std::string& code) {
  static const std::regex call(R"(torch\.ops\.aten\.(\w+_)\.)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(code.begin(), code.end(), call), end; it != end; ++it)
    if ((*it)[1] != "copy_") out.push_back((*it)[1]);
  return out;
}

TEST(Capture, FunctionalizeWritesUpdatesThroughEveryKindOfView) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();  // 4 x 6
    auto y = x * 1;
    y.t().select(0, 1).add_(1);
    y.permute({1, 0}).narrow(0, 2, 2).mul_(2);
    y.chunk(3, 1)[2].zero_();
    y.unbind(0)[3].fill_(5);
    y.diagonal().sub_(1);
    y.as_strided({2, 2}, {6, 1}, 1).div_(2);
    y.view({2, 2, 6}).squeeze().unsqueeze(0).add_(3);
    auto row = y[1];  // read after y changes below: replayed
    y.split_with_sizes({1, 3})[1].mul_(-1);
    x.reshape({24}).add_(y.reshape({24}));
    x.transpose(0, 1)[0].copy_(row.narrow(0, 0, 4));
    return c10::ivalue::Tuple::create({y, row, y.diagonal()});
  };
  auto x = torch::randn({4, 6});
  auto gm = fx::capture(f, {x.clone()}, with([](fx::CaptureOptions& o) { o.functionalize = true; }));
  const std::string code = gm->code();
  EXPECT_EQ(in_place_calls(code), std::vector<std::string>{}) << code;
  for (const char* scatter : {"select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"})
    EXPECT_NE(code.find(scatter), std::string::npos) << scatter << "\n" << code;
  EXPECT_NE(code.find("torch.ops.aten.copy_.default(arg0_1, "), std::string::npos) << code;

  auto a = x.clone(), b = x.clone();
  auto want = f({a}).toTupleRef().elements();
  auto got = gm->run({b}).toTupleRef().elements();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::allclose(got[i].toTensor(), want[i].toTensor())) << i;
  EXPECT_TRUE(torch::allclose(a, b)) << "the input's update";
}

TEST(Capture, FunctionalizeWritesBackAnAttributeUpdatedThroughAView) {
  auto net = std::make_shared<Net>();
  auto step = [&](const Inputs& in) -> c10::IValue {
    net->bn->running_mean.narrow(0, 0, 2).add_(1);
    return net->forward(in[0].toTensor());
  };
  net->eval();
  auto gm = fx::capture(*net, step, {torch::randn({2, 4})},
                        with([](fx::CaptureOptions& o) { o.functionalize = true; }));
  const std::string code = gm->code();
  EXPECT_EQ(in_place_calls(code), std::vector<std::string>{}) << code;
  EXPECT_NE(code.find("slice_scatter"), std::string::npos) << code;
  EXPECT_NE(code.find("copy_ = torch.ops.aten.copy_.default(bn_running_mean"), std::string::npos) << code;

  // The graph updates the module's buffer (which it shares) as the code does.
  auto before = net->bn->running_mean.clone();
  auto x = torch::randn({2, 4});
  auto got = gm->run({x}).toTensor();
  EXPECT_TRUE(torch::allclose(net->bn->running_mean.narrow(0, 0, 2), before.narrow(0, 0, 2) + 1));
  EXPECT_TRUE(torch::equal(net->bn->running_mean[2], before[2]));
  EXPECT_TRUE(torch::allclose(got, net->forward(x)));
}

TEST(Capture, FunctionalizeNamesAViewItCannotWriteThrough) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto y = in[0].toTensor() * 1;
    y.view(torch::kInt32).add_(1);
    return y;
  };
  std::string msg = message_of([&] {
    fx::capture(f, {torch::randn({3, 2})}, with([](fx::CaptureOptions& o) { o.functionalize = true; }));
  });
  EXPECT_NE(msg.find("a view made by aten::view.dtype"), std::string::npos) << msg;
  EXPECT_NE(msg.find("clone"), std::string::npos) << msg;
}

TEST(Capture, FunctionalizeLetsTheTensorsTheCodeDropsDie) {
  // Each step makes a fresh tensor, updates it through a view and drops
  // both: the capture must not keep them alive (a model's activations), and
  // a later tensor at a freed address must not inherit an earlier update.
  using Weak = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  std::vector<Weak> first_steps;
  size_t alive_at_end = 0;
  auto f = [&](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    auto acc = x.sum();
    for (int i = 0; i < 200; ++i) {
      auto a = x * (i + 1);
      auto v = a.view({-1});
      v.narrow(0, 0, 2).add_(1);
      acc = acc + a.sum();
      if (i < 4) {
        first_steps.emplace_back(a.getIntrusivePtr());
        first_steps.emplace_back(v.getIntrusivePtr());
      }
    }
    for (const Weak& w : first_steps) alive_at_end += w.expired() ? 0 : 1;
    return acc;
  };
  auto x = torch::randn({3, 4});
  auto gm = fx::capture(f, {x}, with([](fx::CaptureOptions& o) { o.functionalize = true; }));
  EXPECT_EQ(first_steps.size(), 8U);
  EXPECT_EQ(alive_at_end, 0U) << "tensors of the first steps still alive at the end of the capture";
  EXPECT_EQ(in_place_calls(gm->code()), std::vector<std::string>{});
  first_steps.clear();
  auto y = torch::randn({3, 4});
  EXPECT_TRUE(torch::allclose(gm->run({y}).toTensor(), f({y}).toTensor()));
}

TEST(Capture, BadInputsAndThrowingFunctions) {
  auto id = [](const Inputs& in) { return in[0]; };
  std::string msg;
  try {
    fx::capture(id, {c10::IValue(3)});
  } catch (const fx::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("input 0 ('arg0') is a Int"), std::string::npos) << msg;

  auto throws = [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    return x.mm(x);  // (2,3) x (2,3): LibTorch throws
  };
  msg = message_of([&] { fx::capture(throws, {torch::randn({2, 3})}); });
  EXPECT_NE(msg.find("the captured function threw (the last operator it called: aten::mm)"),
            std::string::npos)
      << msg;

  auto nested = [&](const Inputs& in) -> c10::IValue {
    fx::capture(id, in);
    return in[0];
  };
  try {
    fx::capture(nested, {torch::randn({2})});
    ADD_FAILURE() << "nested capture accepted";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  // Capture still works after the failures.
  EXPECT_NO_THROW(fx::capture(id, {torch::randn({2})}));
}

TEST(Capture, TensorsMadeOnOtherThreadsDuringTheCaptureAreRefused) {
  at::Tensor from_thread;
  auto f = [&](const Inputs& in) -> c10::IValue {
    std::thread t([&] { from_thread = torch::ones({2}) * 3; });
    t.join();
    return in[0].toTensor() + from_thread;
  };
  std::string msg = message_of([&] { fx::capture(f, {torch::randn({2})}); });
  EXPECT_NE(msg.find("a tensor made on another thread while the capture ran is used (the last operator "
                     "called: aten::add.Tensor)"),
            std::string::npos)
      << msg;

  // Returned as it is: refused too.
  msg = message_of([&] {
    fx::capture([&](const Inputs&) -> c10::IValue { return std::async(std::launch::async, [] { return torch::zeros({3}); }).get(); },
                {torch::randn({2})});
  });
  EXPECT_NE(msg.find("made on another thread"), std::string::npos) << msg;

  // Made on another thread before the capture: a constant, as any tensor
  // from outside.
  std::thread([&] { from_thread = torch::ones({2}) * 3; }).join();
  auto gm = fx::capture([&](const Inputs& in) -> c10::IValue { return in[0].toTensor() + from_thread; },
                        {torch::randn({2})});
  EXPECT_EQ(gm->code().find("ones"), std::string::npos) << gm->code();
  EXPECT_NE(gm->code().find("_tensor_constant0"), std::string::npos) << gm->code();
}

TEST(Capture, WorkLaunchedOnOtherThreadsIsRefused) {
  auto f = [](const Inputs& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor(), y;
    std::promise<void> done;
    at::launch([&] {
      try {
        y = x * 2;
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    done.get_future().get();
    return y;
  };
  std::string msg = message_of([&] { fx::capture(f, {torch::randn({2})}); });
  EXPECT_NE(msg.find("aten::mul ran on another thread than the one capturing"), std::string::npos) << msg;
}

// `f` captured on one input `xs`, a list of the two tensors.
template <class F>
std::unique_ptr<fx::GraphModule> capture_on_a_list(F f, const at::Tensor& a, const at::Tensor& b) {
  return fx::capture(f, {c10::List<at::Tensor>({a, b})},
                     with([](fx::CaptureOptions& o) { o.input_names = {"xs"}; }));
}

TEST(Capture, StructuredInputsKeepTheirStructure) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto xs = in[0].toTensorList();
    return c10::ivalue::Tuple::create({xs.get(0) * xs.get(1), xs.get(0)});
  };
  auto a = torch::randn({2}), b = torch::randn({2});
  auto gm = capture_on_a_list(f, a, b);
  EXPECT_NE(gm->code().find("xs_1, xs_2, = fx_pytree.tree_flatten_spec([xs], self._in_spec)"),
            std::string::npos)
      << gm->code();
  fx::Value out = gm->forward({fx::Value::list({a, b})});
  EXPECT_TRUE(torch::allclose(out.items()[0].ivalue().toTensor(), a * b));
}

TEST(Capture, StructuredInputsCanReturnADict) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto xs = in[0].toTensorList();
    c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
    out.insert("prod", xs.get(0) * xs.get(1));
    out.insert("pair", c10::ivalue::Tuple::create({xs.get(1), xs.get(0) + 1}));
    return out;
  };
  auto a = torch::randn({2}), b = torch::randn({2});
  auto gm = capture_on_a_list(f, a, b);
  EXPECT_NE(gm->code().find("return pytree.tree_unflatten([mul, xs_2, add], self._out_spec)"),
            std::string::npos)
      << gm->code();
  fx::Value out = gm->forward({fx::Value::list({a, b})});
  ASSERT_TRUE(out.is_dict());
  EXPECT_EQ(out.keys(), (std::vector<std::string>{"prod", "pair"}));
  EXPECT_TRUE(torch::allclose(out["prod"].tensor(), a * b));
  EXPECT_TRUE(torch::allclose(out["pair"][1].tensor(), a + 1));
}

// A training step of Net on `device`: the graph holds the backward's
// operators and gives the loss and gradients eager backward gives. (On CUDA
// the engine runs the backward on its device thread.)
void check_training_step(const torch::Device& device) {
  torch::manual_seed(0);
  auto net = std::make_shared<Net>();
  auto x = torch::randn({4, 4}).to(device);
  net->to(device);
  auto step = [&](const Inputs& in) -> c10::IValue {
    auto loss = net->forward(in[0].toTensor()).pow(2).sum();
    loss.backward();
    return loss;
  };
  auto gm = fx::capture_training_step(*net, step, {x});
  for (const auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined()) << "grads are restored";
  EXPECT_NE(gm->code().find("threshold_backward"), std::string::npos) << gm->code();

  auto out = gm->run({x});
  auto loss = step({x}).toTensor();  // eager, filling .grad()
  const auto& items = out.toTupleRef().elements();
  EXPECT_EQ(items[0].toTensor().device(), device);
  EXPECT_TRUE(torch::allclose(items[0].toTensor(), loss, 1e-4, 1e-5));
  auto grads = items[1].toGenericDict();
  ASSERT_EQ(grads.size(), 4u);
  for (const auto& p : net->named_parameters())
    EXPECT_TRUE(torch::allclose(grads.at(p.key()).toTensor(), p.value().grad(), 1e-4, 1e-5)) << p.key();
}

TEST(Capture, TrainingStepGivesTheGradientsOfBackward) { check_training_step(torch::kCPU); }

TEST(Capture, CapturedGraphsAreOrdinaryGraphs) {
  auto f = [](const Inputs& in) -> c10::IValue {
    auto x = in[0].toTensor();
    auto a = torch::relu(x), b = torch::relu(x);
    torch::sigmoid(x);  // unused
    return a + b;
  };
  auto x = torch::randn({3});
  auto gm = fx::capture(f, {x});
  fx::passes::cse(*gm);
  fx::passes::eliminate_dead_code(*gm);
  EXPECT_EQ(gm->code(),
            "\n\n\ndef forward(self, arg0_1):\n"
            "    relu = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n"
            "    add = torch.ops.aten.add.Tensor(relu, relu);  relu = None\n"
            "    return add\n    ");
  auto loaded = fx::load_from_bytes(fx::save_to_bytes(*gm));
  EXPECT_EQ(loaded->code(), gm->code());
  EXPECT_TRUE(torch::allclose(loaded->run({x}).toTensor(), f({x}).toTensor()));
}

TEST(Capture, StockModulesAsTheyAre) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)),
                            torch::nn::BatchNorm2d(4), torch::nn::ReLU());
  net->eval();
  auto x = torch::randn({1, 3, 8, 8});
  auto gm = fx::capture_module(net, x);
  EXPECT_NE(gm->code().find("torch.ops.aten.convolution.default(arg0_1, _0_weight, _0_bias, [1, 1], [1, 1]"),
            std::string::npos)
      << gm->code();
  EXPECT_NE(gm->code().find("_1_running_mean = getattr(self, \"1\").running_mean"), std::string::npos)
      << gm->code();
  auto y = torch::randn({2, 3, 8, 8});
  EXPECT_TRUE(torch::allclose(gm->run({y}).toTensor(), net->forward(y), 1e-4, 1e-5));

  torch::nn::LSTM lstm(torch::nn::LSTMOptions(4, 6).batch_first(true));
  auto seq = torch::randn({2, 5, 4});
  auto lstm_gm = fx::capture_module(lstm, seq);
  auto got = lstm_gm->run({seq}).toTupleRef().elements();
  auto [want, state] = lstm->forward(seq);
  EXPECT_TRUE(torch::allclose(got[0].toTensor(), want, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(got[1].toTupleRef().elements()[1].toTensor(), std::get<1>(state), 1e-4, 1e-5));

  // LibTorch's MultiheadAttention compares query and key with torch::equal to
  // pick its self-attention path: data-dependent, refused by name unless
  // allowed.
  torch::nn::MultiheadAttention attention(8, 2);
  auto q = torch::randn({5, 2, 8});
  auto attend = [&](const Inputs& in) -> c10::IValue {
    auto [out, weights] = attention->forward(in[0].toTensor(), in[0].toTensor(), in[0].toTensor());
    return c10::ivalue::Tuple::create({out, weights});
  };
  EXPECT_NE(
      message_of([&] { fx::capture(*attention.ptr(), attend, {q}); }).find("aten::equal reads tensor data"),
      std::string::npos);
  auto mha = fx::capture(*attention.ptr(), attend, {q},
                         with([](fx::CaptureOptions& o) { o.allow_data_dependent = true; }));
  auto [out, weights] = attention->forward(q, q, q);
  EXPECT_TRUE(torch::allclose(mha->run({q}).toTupleRef().elements()[0].toTensor(), out, 1e-4, 1e-5));
}

// A backward that runs a backward of its own, nested deeper than the
// autograd engine's reentrant limit (60): the engine runs the deepest
// levels on a thread of its reentrant pool, with the capturing thread's
// state, as it runs a CUDA backward on its device thread. Those operators
// belong to the capture.
struct Nested : torch::autograd::Function<Nested> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t depth) {
    ctx->saved_data["depth"] = depth;
    return x * 2;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    const int64_t depth = ctx->saved_data["depth"].toInt();
    at::Tensor grad = g[0] * 2;
    if (depth > 0) {
      torch::AutoGradMode on(true);
      auto y = g[0].detach().requires_grad_();
      auto inner = Nested::apply(y, depth - 1).sum();
      grad = grad + torch::autograd::grad({inner}, {y})[0].sin();
    }
    return {grad, at::Tensor()};
  }
};

TEST(Capture, BackwardOnAnAutogradWorkerThreadIsCaptured) {
  constexpr int64_t kDepth = 70;
  auto lin = torch::nn::Linear(3, 3);
  auto x = torch::randn({2, 3});
  auto step = [&](const Inputs& in) -> c10::IValue {
    auto loss = Nested::apply(lin->forward(in[0].toTensor()), kDepth).sum();
    loss.backward();
    return loss;
  };
  auto gm = fx::capture_training_step(*lin, step, {x});
  // One sin per nested level: the deepest ones ran on the pool's thread.
  size_t sins = 0;
  for (const fx::Node* n : gm->graph().nodes())
    if (n->op() == fx::Op::call_function && n->target().str() == "torch.ops.aten.sin.default") ++sins;
  EXPECT_EQ(sins, static_cast<size_t>(kDepth));

  auto out = gm->run({x});
  lin->zero_grad();
  auto loss = step({x}).toTensor();
  auto grads = out.toTupleRef().elements()[1].toGenericDict();
  EXPECT_TRUE(torch::allclose(out.toTupleRef().elements()[0].toTensor(), loss));
  for (const auto& p : lin->named_parameters())
    EXPECT_TRUE(torch::allclose(grads.at(p.key()).toTensor(), p.value().grad(), 1e-4, 1e-5)) << p.key();
}

// Skipped without a GPU.
TEST(Capture, TrainingStepOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  check_training_step(torch::kCUDA);
}

}  // namespace
