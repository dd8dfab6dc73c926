// fx::save_exported: graphs fxcpp captured, written as .pt2 files. This test
// writes them (DIR/NAME.pt2, with the inputs NAME.in.pt, the outputs fxcpp
// computed NAME.out.pt and its graph text NAME.graph.txt) and reads each back
// itself; pt2_programs.py check reads them into torch.export.load and
// compares the graph text and the outputs.
#include <fx/capture.h>
#include <fx/control_flow.h>
#include <fx/exported_program.h>
#include <fx/state_dict.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;

const std::string kOut = FXCPP_PT2_SAVED;

// The fx::Error save_exported throws for `ep`, or "no error".
std::string save_error(const fx::ExportedProgram& ep) {
  try {
    fx::save_exported(ep, kOut + "/not_written.pt2.tmp");
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

struct Case {
  std::string name;
  std::shared_ptr<torch::nn::Module> root;
  fx::CaptureFunction fn;
  std::vector<c10::IValue> inputs;
  // torch.export reads a higher-order operator's operands back as a list
  // where the capture made a tuple: the reloaded graph prints `[x]`.
  bool control_flow = false;
};

struct Norms : torch::nn::Module {
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({6})};
  at::Tensor steps;
  Norms() {
    register_module("ln", ln);
    steps = register_buffer("steps", torch::zeros({1}));
  }
};

std::vector<Case> cases() {
  torch::manual_seed(0);
  std::vector<Case> out;
  {
    torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
    out.push_back({"mlp",
                   mlp.ptr(),
                   [mlp](const std::vector<c10::IValue>& in) mutable -> c10::IValue {
                     return mlp->forward(in[0].toTensor());
                   },
                   {torch::randn({3, 8})}});
  }
  {
    torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)),
                              torch::nn::BatchNorm2d(4), torch::nn::ReLU());
    net->eval();
    out.push_back({"conv_bn",
                   net.ptr(),
                   [net](const std::vector<c10::IValue>& in) mutable -> c10::IValue {
                     return torch::adaptive_avg_pool2d(net->forward(in[0].toTensor()), {1, 1}).flatten(1);
                   },
                   {torch::randn({2, 3, 8, 8})}});
  }
  {
    // Multi-output operators (max.dim, split), a dict output, an in-place
    // update of a buffer, LayerNorm's unused mean and rstd.
    auto norms = std::make_shared<Norms>();
    out.push_back({"structured",
                   norms,
                   [norms](const std::vector<c10::IValue>& in) -> c10::IValue {
                     at::Tensor x = in[0].toTensor();
                     norms->steps.add_(1);
                     auto parts = norms->ln->forward(x).split(2, -1);
                     auto [values, indices] = x.max(-1);
                     c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
                     d.insert("sum", parts[0] + parts[2] * norms->steps);
                     d.insert("max", values);
                     d.insert("argmax", indices);
                     return d;
                   },
                   {torch::randn({4, 6})}});
  }
  {
    // fx::cond and fx::while_loop: their branches go into the file as graphs.
    auto none = std::make_shared<torch::nn::Module>();
    out.push_back({"control_flow",
                   none,
                   [](const std::vector<c10::IValue>& in) -> c10::IValue {
                     at::Tensor x = in[0].toTensor();
                     at::Tensor y = fx::cond(
                         x.sum() > 0, [](const fx::Tensors& a) { return fx::Tensors{a[0].sin()}; },
                         [](const fx::Tensors& a) { return fx::Tensors{a[0].cos() + 1}; }, {x})[0];
                     auto loop =
                         fx::while_loop([](const fx::Tensors& c) { return c[0].sum() < 100; },
                                        [](const fx::Tensors& c) { return fx::Tensors{c[0] * 2 + 1}; }, {y});
                     return loop[0];
                   },
                   {torch::randn({3})},
                   true});
  }
  return out;
}

std::vector<at::Tensor> leaves(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  std::function<void(const c10::IValue&)> walk = [&](const c10::IValue& x) {
    if (x.isTensor())
      out.push_back(x.toTensor());
    else if (x.isTuple())
      for (const auto& e : x.toTupleRef().elements()) walk(e);
    else if (x.isList())
      for (const auto& e : x.toListRef()) walk(e);
    else if (x.isGenericDict())
      for (const auto& e : x.toGenericDict()) walk(e.value());
  };
  walk(v);
  return out;
}

TEST(SaveExported, CapturedGraphsRoundTrip) {
  fs::create_directories(kOut);
  for (auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto gm = fx::capture(*c.root, c.fn, c.inputs);
    fx::ExportedProgram ep = fx::to_exported_program(*gm);
    const std::string path = kOut + "/" + c.name + ".pt2";
    fx::save_exported(ep, path);
    EXPECT_TRUE(fx::is_pt2_package(path));
    fx::save_values(c.inputs, kOut + "/" + c.name + ".in.pt");

    fx::ExportedProgram back = fx::load_exported(path);
    // What torch.export.load must print too (pt2_programs.py --check).
    std::ofstream(kOut + "/" + c.name + ".graph.txt") << back.graph().to_string();
    if (!c.control_flow) EXPECT_EQ(back.graph().to_string(), ep.graph().to_string());
    EXPECT_EQ(back.graph_signature().to_string(), ep.graph_signature().to_string());
    std::vector<c10::IValue> in1, in2;
    for (const auto& v : c.inputs)
      in1.emplace_back(v.toTensor().clone()), in2.emplace_back(v.toTensor().clone());
    c10::IValue expected = ep.run(in1);
    c10::IValue got = back.run(in2);
    auto e = leaves(expected), g = leaves(got);
    ASSERT_EQ(e.size(), g.size());
    for (size_t i = 0; i < e.size(); ++i) EXPECT_TRUE(at::allclose(e[i], g[i])) << "output " << i;
    std::vector<c10::IValue> flat(e.begin(), e.end());
    fx::save_values(flat, kOut + "/" + c.name + ".out.pt");
  }
}

TEST(SaveExported, RefusesWhatItCannotWrite) {
  // A torch.fx-level graph (no ATen operators) is no exported program.
  auto graph = std::make_unique<fx::Graph>();
  fx::Node* x = graph->placeholder("x");
  graph->output(graph->call_function("torch.relu", {x}));
  fx::GraphModule gm(std::map<std::string, fx::GraphModule::Attr>{}, std::move(graph));
  try {
    fx::to_exported_program(gm);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'relu' calls torch.relu"), std::string::npos) << e.what();
  }
}

// Saves `ep` as <kOut>/<name>.pt2 and reads it back: the same graph text,
// which torch.export.load must print too (<name>.graph.txt, for
// pt2_programs.py --check).
fx::ExportedProgram save_and_load(const fx::ExportedProgram& ep, const std::string& name) {
  fs::create_directories(kOut);
  fx::save_exported(ep, kOut + "/" + name + ".pt2");
  fx::ExportedProgram back = fx::load_exported(kOut + "/" + name + ".pt2");
  EXPECT_EQ(back.graph().to_string(), ep.graph_module().graph().to_string());
  std::ofstream(kOut + "/" + name + ".graph.txt") << back.graph().to_string();
  return back;
}

TEST(SaveExported, ADynamicCaptureRunsAtAnySizeInItsRange) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4, 3);
  auto fn = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    return lin->forward(x).view({x.size(0) * 3});
  };
  fx::CaptureOptions options;
  options.dynamic_shapes = {{{0, fx::Dim{"batch", 2, 16}}}};
  fx::ExportedProgram ep = fx::to_exported_program(*fx::capture(*lin, fn, {torch::randn({5, 4})}, options));
  ASSERT_EQ(ep.range_constraints().count("s0"), 1u);
  EXPECT_EQ(ep.range_constraints().at("s0").min_val, 2);
  EXPECT_EQ(ep.range_constraints().at("s0").max_val, 16);
  at::Tensor x = torch::randn({9, 4});
  EXPECT_TRUE(torch::allclose(ep.run({x}).toTensor(), fn({x}).toTensor()));
  try {
    ep.run({torch::randn({20, 4})});
    ADD_FAILURE() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 0 is 20, outside the range [2, 16] of s0"),
              std::string::npos)
        << e.what();
  }
  // Written with its symbols: fxcpp reads it back with the same graph and
  // ranges; torch.export.load too (pt2_programs.py --check runs it at both
  // sizes).
  fx::ExportedProgram back = save_and_load(ep, "dynamic_batch");
  ASSERT_EQ(back.range_constraints().count("s0"), 1u);
  EXPECT_EQ(back.range_constraints().at("s0").max_val, 16);
  at::Tensor x5 = torch::randn({5, 4});
  EXPECT_TRUE(torch::allclose(back.run({x}).toTensor(), fn({x}).toTensor()));
  fx::save_values({x5}, kOut + "/dynamic_batch.in.pt");
  fx::save_values({fn({x5}).toTensor()}, kOut + "/dynamic_batch.out.pt");
  fx::save_values({x}, kOut + "/dynamic_batch.in2.pt");
  fx::save_values({fn({x}).toTensor()}, kOut + "/dynamic_batch.out2.pt");
}

// Two symbols: a product (B * T) and a linear size (2 * T + 1) in the file.
TEST(SaveExported, TwoDynamicDimensionsAndTheirProduct) {
  auto fn = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    const int64_t B = x.size(0), T = x.size(1);
    return c10::ivalue::Tuple::create(
        {x.reshape({B * T, 4}).relu(), torch::cat({x, x, x.slice(1, 0, 1)}, 1).view({B, 2 * T + 1, 4})});
  };
  fx::CaptureOptions options;
  options.dynamic_shapes = {{{0, fx::Dim{"batch"}}, {1, fx::Dim{"length"}}}};
  at::Tensor example = torch::randn({2, 3, 4});
  auto gm = fx::capture(fn, {example}, options);
  fx::ExportedProgram ep = fx::to_exported_program(*gm);
  fx::ExportedProgram back = save_and_load(ep, "dynamic_two_dims");
  at::Tensor other = torch::randn({5, 7, 4});
  auto flat = [](const c10::IValue& v) {
    std::vector<c10::IValue> out;
    for (const auto& e : v.toTupleRef().elements()) out.push_back(e);
    return out;
  };
  auto got = flat(back.run({other})), want = flat(fn({other}));
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(torch::equal(got[i].toTensor(), want[i].toTensor())) << i;
  fx::save_values({example}, kOut + "/dynamic_two_dims.in.pt");
  fx::save_values(flat(fn({example})), kOut + "/dynamic_two_dims.out.pt");
  fx::save_values({other}, kOut + "/dynamic_two_dims.in2.pt");
  fx::save_values(want, kOut + "/dynamic_two_dims.out2.pt");
}

// Sizes inside a cond's branches, read from the branch's operand: written
// with their symbols, read back by fxcpp and by torch.export.load, and run
// at another size (pt2_programs.py --check).
TEST(SaveExported, DynamicSizesInsideABranchRoundTrip) {
  auto fn = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    return fx::cond(
        x.sum() > 0, [](const fx::Tensors& a) { return fx::Tensors{a[0] * a[0].size(0)}; },
        [](const fx::Tensors& a) {
          const int64_t b = a[0].size(0);
          return fx::Tensors{a[0].reshape({b * 3}).cos().view({b, 3})};
        },
        {x})[0];
  };
  fx::CaptureOptions options;
  options.dynamic_shapes = {{{0, fx::Dim{"batch", 2, 64}}}};
  at::Tensor example = torch::rand({4, 3});
  fx::ExportedProgram ep = fx::to_exported_program(*fx::capture(fn, {example}, options));
  fs::create_directories(kOut);
  fx::save_exported(ep, kOut + "/dynamic_cond.pt2");
  fx::ExportedProgram back = fx::load_exported(kOut + "/dynamic_cond.pt2");
  std::ofstream(kOut + "/dynamic_cond.graph.txt") << back.graph().to_string();
  for (at::Tensor x : {torch::rand({9, 3}), -torch::rand({9, 3})})
    EXPECT_TRUE(torch::allclose(back.run({x}).toTensor(), fn({x}).toTensor()));
  at::Tensor other = -torch::rand({9, 3});
  fx::save_values({example}, kOut + "/dynamic_cond.in.pt");
  fx::save_values({fn({example}).toTensor()}, kOut + "/dynamic_cond.out.pt");
  fx::save_values({other}, kOut + "/dynamic_cond.in2.pt");
  fx::save_values({fn({other}).toTensor()}, kOut + "/dynamic_cond.out2.pt");
}

// A size with no linear or product expression (a strided convolution's
// height, (h - 3) // 2 + 1) is refused by node, not written wrong.
TEST(SaveExported, ASizeWithNoExpressionIsRefusedByNode) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 3).stride(2));
  auto fn = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    return conv->forward(in[0].toTensor());
  };
  fx::CaptureOptions options;
  options.dynamic_shapes = {{{2, fx::Dim{"h"}}}};
  fx::ExportedProgram ep =
      fx::to_exported_program(*fx::capture(*conv, fn, {torch::randn({1, 3, 9, 8})}, options));
  at::Tensor x = torch::randn({1, 3, 14, 8});
  EXPECT_TRUE(torch::allclose(ep.run({x}).toTensor(), conv->forward(x), 1e-5, 1e-6));  // runs; not writable
  const std::string error = save_error(ep);
  EXPECT_NE(error.find("node 'convolution': a size that follows the dynamic dimensions with no expression "
                       "fxcpp can write: dimension 2 is 4, 8, 13 for s0 = 9, 18, 27"),
            std::string::npos)
      << error;
}

// The same inside a cond's branch (a pooling's height, h // 2): refused by
// the node, not written with the example's sizes.
TEST(SaveExported, ABranchSizeWithNoExpressionIsRefusedByNode) {
  auto fn = [](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor x = in[0].toTensor();
    return fx::cond(
        x.sum() > 0,
        [](const fx::Tensors& a) {
          return fx::Tensors{torch::avg_pool2d(a[0], {2, 2})};
        },
        [](const fx::Tensors& a) {
          return fx::Tensors{torch::avg_pool2d(a[0], {2, 2}) * 2};
        },
        {x})[0];
  };
  fx::CaptureOptions options;
  options.dynamic_shapes = {{{2, fx::Dim{"h"}}}};
  fx::ExportedProgram ep = fx::to_exported_program(*fx::capture(fn, {torch::randn({1, 3, 9, 8})}, options));
  at::Tensor x = torch::randn({1, 3, 13, 8});
  EXPECT_TRUE(torch::allclose(ep.run({x}).toTensor(), fn({x}).toTensor()));  // runs; not writable
  const std::string error = save_error(ep);
  EXPECT_NE(error.find("node 'avg_pool2d': a size that follows the dynamic dimensions with no expression "
                       "fxcpp can write: dimension 2 is 4, 9, 13 for s0 = 9, 18, 27"),
            std::string::npos)
      << error;
}

}  // namespace
