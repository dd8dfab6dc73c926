// fx::CompiledModule::export_cpp: a compiled program as a standalone C++
// project. The files and errors here; CompiledExportBuild (the ctest
// `compile.export.build`, label `export`) builds the projects with cmake
// against the LibTorch fxcpp is built against and compares their outputs
// with the compiled module's.
#include <fx/compile.h>
#include <fx/control_flow.h>
#include <fx/error.h>
#include <fx/fx.h>
#include <fx/models/batch_norm_statistics.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "../passes/export_util.h"

namespace {

using export_test::ScratchDir;
using testing::HasSubstr;
namespace fs = std::filesystem;

fx::CompileOptions options_in(const ScratchDir& dir) {
  fx::CompileOptions o;
  o.cache_dir = dir.str("cache");
  return o;
}

// A block of two kernels: a bias and GELU after a matrix product, then after
// another one a row kernel of its bias, a LayerNorm and a masked softmax
// whose row maximum and mask are outputs too (a kernel of three outputs,
// one of them bool).
struct Block {
  torch::nn::Linear up{torch::nn::Linear(24, 40)};
  torch::nn::Linear down{torch::nn::Linear(40, 40)};
  torch::nn::LayerNorm norm{torch::nn::LayerNormOptions({40})};
  torch::nn::Sequential root{up, down, norm};

  c10::IValue operator()(const std::vector<c10::IValue>& in) {
    at::Tensor h = norm->forward(down->forward(torch::gelu(up->forward(in[0].toTensor()))));
    at::Tensor m = h.amax(-1, true);
    at::Tensor mask = h < -1.0;
    at::Tensor e = (h.masked_fill(mask, -std::numeric_limits<double>::infinity()) - m).exp();
    return c10::ivalue::Tuple::create({e / e.sum(-1, true), m * 2.0, mask});
  }
};

TEST(CompiledExport, WritesTheKernelsAndAForwardThatCallsThem) {
  ScratchDir dir("compiled_export_files");
  torch::manual_seed(0);
  Block block;
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(*block.root, block, options_in(dir));
  compiled->run({torch::randn({6, 24})});
  ASSERT_EQ(compiled->report().kernels, 2u);
  compiled->export_cpp(dir.str("project"), {.class_name = "Block"});

  const fs::path p = dir.path() / "project";
  for (const char* f : {"model.h", "model.cpp", "forward.cpp", "main.cpp", "weights.pt", "CMakeLists.txt",
                        "kernels.cpp", "kernels.h"})
    EXPECT_TRUE(fs::exists(p / f)) << f;
  // kernels.cpp is the source fx::compile built.
  const std::string built =
      export_test::read_text(fs::path(compiled->report().library).replace_extension(".cpp"));
  EXPECT_EQ(export_test::read_text(p / "kernels.cpp"), built);
  const std::string forward = export_test::read_text(p / "forward.cpp");
  const std::string kernels = export_test::read_text(p / "kernels.h");
  EXPECT_THAT(forward, HasSubstr("#include \"kernels.h\""));
  EXPECT_THAT(forward, HasSubstr("at::mm("));
  size_t calls = 0;
  for (fx::Node* n : compiled->compiled_graph().graph().nodes()) {
    const std::string& t = n->target().str();
    if (n->op() != fx::Op::call_function || t.rfind("fxcpp.compiled.", 0) != 0) continue;
    const std::string name = t.substr(t.rfind('.') + 1);
    ++calls;
    EXPECT_THAT(forward, HasSubstr("fx_kernels::" + name + "("));
    EXPECT_THAT(kernels, HasSubstr("void " + name + "(const float* const* in, float* const* out"));
    EXPECT_THAT(kernels, HasSubstr("::" + name + "(in, out, dims);"));
  }
  EXPECT_EQ(calls, 2u);
  // The kernel of three outputs gives them all, the mask as a bool tensor.
  EXPECT_THAT(kernels, HasSubstr("return {out0, out1, out2};"));
  EXPECT_THAT(kernels, HasSubstr("at::kBool);"));
  const std::string cmake = export_test::read_text(p / "CMakeLists.txt");
  EXPECT_THAT(cmake, HasSubstr("add_library(fx_kernels OBJECT kernels.cpp)"));
  EXPECT_THAT(cmake, HasSubstr("set(FX_KERNEL_ISA \""));
}

TEST(CompiledExport, AFloat64KernelTakesDoubles) {
  ScratchDir dir("compiled_export_double");
  auto compiled =
      fx::compile([](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 0.1 + 1.0).relu(); },
                  options_in(dir));
  compiled->run({torch::randn({3, 4}, torch::kDouble)});
  ASSERT_EQ(compiled->report().kernels, 1u);
  compiled->export_cpp(dir.str("project"));
  const std::string kernels = export_test::read_text(dir.path() / "project" / "kernels.h");
  EXPECT_THAT(kernels, HasSubstr("(const double* const* in, double* const* out, const int64_t* dims);"));
  EXPECT_THAT(kernels, HasSubstr("at::kDouble, {3, 4}, {4, 1});"));
  EXPECT_THAT(kernels, HasSubstr("in0.data_ptr<double>()"));
  // A tensor of another type is named as Python names it (torch.float32).
  EXPECT_THAT(kernels, HasSubstr("\" is not a torch.\" + std::string(c10::getDtypeNames(dtype).first)"));
  EXPECT_THAT(export_test::read_text(dir.path() / "project" / "kernels.cpp"), HasSubstr("using S = double;"));
}

TEST(CompiledExport, ABFloat16KernelTakesItsTensorsAsFloatPointers) {
  ScratchDir dir("compiled_export_bfloat16");
  auto compiled =
      fx::compile([](const std::vector<c10::IValue>& in) { return (in[0].toTensor() * 0.1 + 1.0).relu(); },
                  options_in(dir));
  compiled->run({torch::randn({3, 4}, torch::kBFloat16)});
  ASSERT_EQ(compiled->report().kernels, 1u);
  compiled->export_cpp(dir.str("project"));
  const std::string kernels = export_test::read_text(dir.path() / "project" / "kernels.h");
  EXPECT_THAT(kernels, HasSubstr("(const float* const* in, float* const* out, const int64_t* dims);"));
  EXPECT_THAT(kernels, HasSubstr("at::kBFloat16, {3, 4}, {4, 1});"));
  EXPECT_THAT(kernels, HasSubstr("reinterpret_cast<const float*>(in0.data_ptr<at::BFloat16>())"));
  EXPECT_THAT(export_test::read_text(dir.path() / "project" / "kernels.cpp"),
              HasSubstr("load_as(reinterpret_cast<const c10::BFloat16*>(in[0])"));
}

TEST(CompiledExport, AProgramWithNoKernelIsPlainExportCpp) {
  ScratchDir dir("compiled_export_none");
  auto compiled = fx::compile([](const std::vector<c10::IValue>& in) { return in[0].toTensor().sum(0); },
                              options_in(dir));
  compiled->run({torch::randn({3, 4})});
  ASSERT_EQ(compiled->report().kernels, 0u);
  compiled->export_cpp(dir.str("project"));
  EXPECT_FALSE(fs::exists(dir.path() / "project" / "kernels.cpp"));
  EXPECT_THAT(export_test::read_text(dir.path() / "project" / "forward.cpp"),
              testing::Not(HasSubstr("kernels.h")));
}

TEST(CompiledExport, WhatItCannotWriteIsAnErrorBeforeAnyFile) {
  ScratchDir dir("compiled_export_errors");
  auto compiled = fx::compile(
      [](const std::vector<c10::IValue>& in) { return torch::sigmoid(in[0].toTensor()) * 2.0 + 1.0; },
      options_in(dir));
  EXPECT_THAT([&] { compiled->export_cpp(dir.str("early")); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("nothing is compiled before the first run()")));
  compiled->run({torch::randn({4, 4})});
  EXPECT_THAT([&] { compiled->export_cpp(dir.str("bad"), {.class_name = "not a name"}); },
              testing::ThrowsMessage<fx::Error>(HasSubstr("is not a C++ identifier")));
  EXPECT_FALSE(fs::exists(dir.path() / "bad"));
}

// A cond whose branches each fuse a kernel, in a loop whose body fuses one:
// each branch's library is a file of the project.
c10::IValue branching(const std::vector<c10::IValue>& in) {
  at::Tensor x = in[0].toTensor();
  at::Tensor y = fx::cond(
      x.sum() > 0, [](const fx::Tensors& t) { return fx::Tensors{torch::sigmoid(t[0]) * 2.0 + 1.0}; },
      [](const fx::Tensors& t) { return fx::Tensors{torch::tanh(t[0] - 1.0) * t[0]}; }, {x})[0];
  return fx::while_loop([](const fx::Tensors& c) { return c[0].sum() < 60; },
                        [](const fx::Tensors& c) { return fx::Tensors{(c[0] + 1.0).abs() * 1.5}; }, {y})[0];
}

TEST(CompiledExport, EachBranchsKernelsAreAFileOfTheProject) {
  ScratchDir dir("compiled_export_branches");
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(branching, options_in(dir));
  compiled->run({torch::rand({3, 5})});
  ASSERT_GE(compiled->report().kernels, 3u);
  compiled->export_cpp(dir.str("project"));
  const fs::path project = dir.path() / "project";
  for (const char* label : {"true_graph_0", "false_graph_0", "while_loop_body_graph_0"}) {
    const fs::path file = project / ("kernels_" + std::string(label) + ".cpp");
    ASSERT_TRUE(fs::exists(file)) << file;
    EXPECT_THAT(export_test::read_text(file), HasSubstr("#define cpp_fused_"));
    EXPECT_THAT(export_test::read_text(project / "kernels.h"), HasSubstr(std::string(label) + "_cpp_fused_"));
    EXPECT_THAT(export_test::read_text(project / "CMakeLists.txt"),
                HasSubstr("kernels_" + std::string(label)));
  }
  const std::string forward = export_test::read_text(project / "forward.cpp");
  EXPECT_THAT(forward, HasSubstr("if ("));
  EXPECT_THAT(forward, HasSubstr("while (true) {"));
  EXPECT_THAT(forward, HasSubstr("fx_kernels::true_graph_0_cpp_fused_"));
}

// ---- building and running the projects ---------------------------------------

// Runs the built fx_model on `inputs`; its exit status, the output in `out`.
int run_model(const ScratchDir& dir, const std::vector<c10::IValue>& inputs, c10::IValue& out) {
  const fs::path project = dir.path() / "project";
  export_test::save_ivalue(dir.path() / "input.pt", c10::ivalue::Tuple::create(inputs));
  const int rc = export_test::run_model(project, dir.path() / "input.pt", dir.path() / "output.pt",
                                        dir.path() / "run.log");
  if (rc == 0) out = export_test::load_ivalue(dir.path() / "output.pt");
  return rc;
}

// Compiling a LibTorch project takes a minute or more: these run only in the
// ctest `compile.export.build` (label `export`), which sets FXCPP_EXPORT_BUILD.
class CompiledExportBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("FXCPP_EXPORT_BUILD")) GTEST_SKIP() << "set FXCPP_EXPORT_BUILD=1 to build the projects";
  }
};

TEST_F(CompiledExportBuild, TheProjectComputesWhatTheCompiledModuleComputes) {
  ScratchDir dir("compiled_export_build");
  torch::manual_seed(0);
  Block block;
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(*block.root, block, options_in(dir));
  const at::Tensor x = torch::randn({6, 24});
  compiled->run({x});  // compiles (and runs the block eagerly)
  const c10::IValue want = compiled->run({x});
  compiled->export_cpp(dir.str("project"), {.class_name = "Block"});
  const fs::path project = dir.path() / "project";
  ASSERT_EQ(export_test::cmake_build(project, "", dir.path() / "build.log"), 0)
      << export_test::read_text(dir.path() / "build.log");
  c10::IValue got;
  ASSERT_EQ(run_model(dir, {x}, got), 0) << export_test::read_text(dir.path() / "run.log");
  export_test::expect_same_outputs(got, want, 1e-5, 1e-6);
  // A transposed input is read from a copy; another size is an error that
  // names the kernel.
  ASSERT_EQ(run_model(dir, {torch::randn({24, 6}).t()}, got), 0)
      << export_test::read_text(dir.path() / "run.log");
  EXPECT_EQ(run_model(dir, {torch::randn({5, 24})}, got), 1);
  EXPECT_THAT(export_test::read_text(dir.path() / "run.log"), HasSubstr("the program was compiled for [6, "));
  // Portable kernels (for another processor): the same outputs.
  ASSERT_EQ(export_test::cmake_build(project, " -DFX_KERNEL_ISA=DEFAULT", dir.path() / "build.log"), 0)
      << export_test::read_text(dir.path() / "build.log");
  ASSERT_EQ(run_model(dir, {x}, got), 0) << export_test::read_text(dir.path() / "run.log");
  export_test::expect_same_outputs(got, want, 1e-5, 1e-6);
}

TEST_F(CompiledExportBuild, AProgramWithBranchesComputesWhatTheCompiledModuleComputes) {
  ScratchDir dir("compiled_export_build_branches");
  torch::NoGradGuard no_grad;
  auto compiled = fx::compile(branching, options_in(dir));
  const at::Tensor x = torch::rand({3, 5}) + 0.5;
  compiled->run({x});  // compiles
  compiled->export_cpp(dir.str("project"));
  ASSERT_EQ(export_test::cmake_build(dir.path() / "project", "", dir.path() / "build.log"), 0)
      << export_test::read_text(dir.path() / "build.log");
  for (const at::Tensor& input : {x, -x}) {  // each branch, and a number of iterations each
    c10::IValue got;
    ASSERT_EQ(run_model(dir, {input}, got), 0) << export_test::read_text(dir.path() / "run.log");
    export_test::expect_same_outputs(got, compiled->run({input}), 1e-5, 1e-6);
  }
}

// A traced model compiled and exported: the project computes what the
// compiled module computes.
void expect_project_matches(fx::Module& model, const at::Tensor& x, const std::string& name,
                            size_t min_kernels) {
  ScratchDir dir("compiled_export_" + name);
  model.eval();
  torch::NoGradGuard no_grad;
  std::unique_ptr<fx::GraphModule> gm = fx::symbolic_trace(model);
  auto compiled = fx::compile(*gm, options_in(dir));
  compiled->run({x});  // compiles (and runs the model eagerly)
  const c10::IValue want = compiled->run({x});
  ASSERT_GE(compiled->report().kernels, min_kernels);
  compiled->export_cpp(dir.str("project"));
  ASSERT_EQ(export_test::cmake_build(dir.path() / "project", "", dir.path() / "build.log"), 0)
      << export_test::read_text(dir.path() / "build.log");
  c10::IValue got;
  ASSERT_EQ(run_model(dir, {x}, got), 0) << export_test::read_text(dir.path() / "run.log");
  export_test::expect_same_outputs(got, want, 1e-5, 1e-6);
}

TEST_F(CompiledExportBuild, ModelProjectsComputeWhatTheCompiledModulesCompute) {
  torch::manual_seed(0);
  auto resnet = fx::models::resnet18(10);
  fx::models::randomize_batch_norm_statistics(*resnet);
  expect_project_matches(*resnet, torch::randn({2, 3, 64, 64}), "resnet18", 8);
  // Attention (bmm, softmax, views), LayerNorms, GELU.
  fx::models::VisionTransformer vit(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  expect_project_matches(vit, torch::randn({2, 3, 32, 32}), "vit", 4);
  // The same in float64: its kernels take doubles.
  fx::models::VisionTransformer vit64(32, 8, 2, 4, 64, 128, 0.0, 0.0, 10);
  vit64.to(torch::kDouble);
  expect_project_matches(vit64, torch::randn({2, 3, 32, 32}, torch::kDouble), "vit64", 4);
}

}  // namespace
