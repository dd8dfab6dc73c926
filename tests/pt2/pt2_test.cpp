// fx::load_exported against torch.export 2.14: pt2_programs.py wrote each
// program with what torch prints for it after torch.export.load and what
// ep.module() returns; fxcpp loads the same file, prints the same text and
// gives the same outputs and state. Broken copies are refused by name.
#include <fx/capture.h>
#include <fx/compile.h>
#include <fx/exported_program.h>
#include <fx/passes/shape_prop.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

const std::string kData = FXCPP_PT2_DATA;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The leaves of nested tuples, lists and dicts, in order.
void leaves_into(const c10::IValue& v, std::vector<c10::IValue>& out) {
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) leaves_into(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) leaves_into(e, out);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) leaves_into(e.value(), out);
  } else {
    out.push_back(v);
  }
}

struct Program {
  nlohmann::json expected;
  std::map<std::string, at::Tensor> io;
};

Program read_program(const std::string& name) {
  Program p;
  p.expected = read_json(kData + "/" + name + ".json");
  for (auto& [k, t] : fx::read_state_dict(kData + "/" + name + ".io.pt")) p.io[k] = t;
  return p;
}

class FromTorchExport : public testing::TestWithParam<std::string> {};

TEST_P(FromTorchExport, PrintsAndRunsAsTorchDoes) {
  const std::string name = GetParam();
  if (!fs::exists(kData + "/" + name + ".pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  fx::ExportedProgram ep = fx::load_exported(kData + "/" + name + ".pt2");
  Program p = read_program(name);
  EXPECT_EQ(ep.graph().to_string(), p.expected["graph"].get<std::string>());
  EXPECT_EQ(ep.graph_module().code(), p.expected["code"].get<std::string>());
  EXPECT_EQ(ep.graph_signature().to_string(), p.expected["signature"].get<std::string>());
  for (auto& [sub, code] : p.expected["subgraphs"].items()) {
    auto* m = dynamic_cast<fx::GraphModule*>(ep.graph_module().get_submodule(sub));
    ASSERT_NE(m, nullptr) << sub;
    EXPECT_EQ(m->code(), code.get<std::string>()) << sub;
  }
  const auto& ranges = p.expected["range_constraints"];
  EXPECT_EQ(ep.range_constraints().size(), ranges.size());
  for (auto& [sym, r] : ranges.items()) {
    ASSERT_TRUE(ep.range_constraints().count(sym)) << sym;
    const fx::RangeConstraint& c = ep.range_constraints().at(sym);
    EXPECT_EQ(c.min_val, r[0].get<int64_t>());
    if (r[1].is_null())
      EXPECT_FALSE(c.max_val);
    else
      EXPECT_EQ(c.max_val, r[1].get<int64_t>());
  }

  // The inputs as forward takes them: pt2_programs.py flattened them; the
  // structured program takes a list, then its keyword argument.
  std::vector<at::Tensor> flat_in;
  for (int i = 0; p.io.count("in." + std::to_string(i)); ++i)
    flat_in.push_back(p.io["in." + std::to_string(i)].clone());
  std::vector<c10::IValue> inputs;
  if (name == "structured") {
    inputs.emplace_back(c10::List<at::Tensor>({flat_in[0], flat_in[1]}));
    inputs.emplace_back(flat_in[2]);
  } else {
    for (const auto& t : flat_in) inputs.emplace_back(t);
  }
  c10::IValue out = ep.run(inputs);
  const std::string kind = p.expected["output_kind"];
  if (kind == "dict") EXPECT_TRUE(out.isGenericDict());
  if (kind == "tuple") EXPECT_TRUE(out.isTuple());
  if (kind == "Tensor") EXPECT_TRUE(out.isTensor());
  std::vector<c10::IValue> leaves;
  leaves_into(out, leaves);
  ASSERT_EQ(leaves.size(), p.expected["num_leaves"].get<size_t>());
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string key = "out." + std::to_string(i);
    if (p.io.count(key)) {
      ASSERT_TRUE(leaves[i].isTensor()) << key;
      EXPECT_TRUE(at::allclose(leaves[i].toTensor(), p.io[key], 1e-5, 1e-6, /*equal_nan=*/true)) << key;
    } else {
      ASSERT_TRUE(leaves[i].isInt()) << key;
      EXPECT_EQ(leaves[i].toInt(), p.expected["values"][std::to_string(i)].get<int64_t>()) << key;
    }
  }
  // State after the run: mutated buffers and inputs.
  for (size_t i = 0; i < flat_in.size(); ++i)
    EXPECT_TRUE(at::allclose(flat_in[i], p.io["after_in." + std::to_string(i)])) << "input " << i;
  for (const auto& [k, t] : p.io) {
    if (k.rfind("after.", 0) != 0) continue;
    const std::string key = k.substr(6);
    const at::Tensor* mine = nullptr;
    for (const auto* d : {&ep.state_dict(), &ep.constants()})
      for (const auto& [dk, dt] : *d)
        if (dk == key) mine = &dt;
    ASSERT_NE(mine, nullptr) << key;
    EXPECT_TRUE(at::allclose(*mine, t)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, FromTorchExport,
                         testing::Values("linear_buffer", "mutations", "dynamic", "structured", "masked",
                                         "cond", "while_loop", "sequential", "doc_example"));

TEST(LoadExported, RefusesSizesOutsideTheExportedRanges) {
  if (!fs::exists(kData + "/dynamic.pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  fx::ExportedProgram ep = fx::load_exported(kData + "/dynamic.pt2");
  auto message = [&](at::Tensor x) -> std::string {
    try {
      ep.run({x});
    } catch (const fx::Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(
      message(torch::randn({100, 4})).find("input 'x' dimension 0 is 100, outside the range [2, 64] of s"),
      std::string::npos)
      << message(torch::randn({100, 4}));
  EXPECT_NE(message(torch::randn({1, 4})).find("dimension 0 is 1, outside the range"), std::string::npos);
  EXPECT_NE(message(torch::randn({8, 5})).find("dimension 1 is 5; the program was exported for 4"),
            std::string::npos);
  EXPECT_NE(message(torch::randn({8})).find("has 1 dimensions"), std::string::npos);
  EXPECT_EQ(ep.run({torch::randn({64, 4})}).toTupleRef().elements()[2].toInt(), 128);
}

// docs/pt2.md's example, as written there.
TEST(LoadExported, TheDocumentedExampleRunsAndCompiles) {
  if (!fs::exists(kData + "/doc_example.pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  fx::ExportedProgram ep = fx::load_exported(kData + "/doc_example.pt2");
  at::Tensor x = torch::randn({16, 4});
  c10::IValue out = ep.run({x});
  EXPECT_EQ(ep.state_dict().back().first, "calls");
  EXPECT_EQ(ep.state_dict().back().second.item<float>(), 1.0f);
  torch::NoGradGuard no_grad;  // parameters require grad: under grad mode compile runs the original
  auto compiled = fx::compile([&](const std::vector<c10::IValue>& in) { return ep.run(in); });
  compiled->run({x});  // compiles: ep.run runs once, captured
  EXPECT_EQ(ep.state_dict().back().second.item<float>(), 2.0f);
  c10::IValue fast = compiled->run({x});
  EXPECT_TRUE(at::allclose(fast.toTensor(), out.toTensor()));
  EXPECT_EQ(compiled->report().kernels, 1u);                     // gelu and * 2 fused after the linear
  EXPECT_EQ(ep.state_dict().back().second.item<float>(), 3.0f);  // the compiled graph writes the buffer back
  std::string message;
  try {
    ep.run({torch::randn({100, 4})});
  } catch (const fx::Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "ExportedProgram.run: input 'x' dimension 0 is 100, outside the range [2, 64] of s77");
}

// fx::compile captures ep.run, whose cond runs through fx::cond: the
// compiled program holds the cond with both branches compiled.
TEST(LoadExported, ACondCompilesAndTakesEitherBranch) {
  if (!fs::exists(kData + "/cond.pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  fx::ExportedProgram ep = fx::load_exported(kData + "/cond.pt2");
  auto compiled = fx::compile([&](const std::vector<c10::IValue>& in) { return ep.run(in); });
  auto tensor = [](const c10::IValue& v) {
    return v.isTuple() ? v.toTupleRef().elements()[0].toTensor() : v.toTensor();
  };
  // The first call compiles (and runs ep eagerly); the others run the program.
  for (int round = 0; round < 2; ++round)
    for (const at::Tensor& x : {torch::rand({3}) + 0.5, -torch::rand({3}) - 0.5})
      EXPECT_TRUE(at::allclose(tensor(compiled->run({x})), tensor(ep.run({x}))));
  EXPECT_NE(compiled->compiled_graph().graph().to_string().find("torch.ops.higher_order.cond"),
            std::string::npos);
  // The file's add.Tensor(cos, 1) is captured as make_fx records it, the
  // number a number (not a scalar_tensor node or a constant), so that the
  // branch's cos and add fuse.
  auto gm = fx::capture([&](const std::vector<c10::IValue>& in) { return ep.run(in); }, {torch::randn({3})});
  auto* false_branch = dynamic_cast<fx::GraphModule*>(gm->get_submodule("false_graph_0"));
  ASSERT_NE(false_branch, nullptr);
  EXPECT_NE(false_branch->code().find("torch.ops.aten.add.Tensor(cos, 1)"), std::string::npos)
      << false_branch->code();
  auto* compiled_false =
      dynamic_cast<fx::GraphModule*>(compiled->compiled_graph().get_submodule("false_graph_0"));
  ASSERT_NE(compiled_false, nullptr);
  EXPECT_NE(compiled_false->graph().to_string().find("cpp_fused_cos_add"), std::string::npos);
}

// Python's zipfile gives the offset of a record that starts past 2 GiB in a
// ZIP64 extra field; sequential_zip64.pt2 is sequential.pt2 with every
// offset given so (pt2_programs.py), which torch.export.load reads.
TEST(LoadExported, ReadsOffsetsFromZip64ExtraFields) {
  if (!fs::exists(kData + "/sequential_zip64.pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  fx::ExportedProgram zip64 = fx::load_exported(kData + "/sequential_zip64.pt2");
  fx::ExportedProgram plain = fx::load_exported(kData + "/sequential.pt2");
  EXPECT_EQ(zip64.graph_module().code(), plain.graph_module().code());
  const at::Tensor x = torch::randn({2, 4});
  EXPECT_TRUE(zip64.run({x}).toTensor().equal(plain.run({x}).toTensor()));
}

TEST(LoadExported, RefusesMalformedFilesByName) {
  const std::string dir = kData + "/malformed";
  if (!fs::exists(dir + "/expected.json")) GTEST_SKIP() << "pt2_programs.py did not run";
  auto expected = read_json(dir + "/expected.json");
  ASSERT_GE(expected.size(), 10u);
  for (auto& [file, words] : expected.items()) {
    std::string message;
    try {
      fx::load_exported(dir + "/" + file);
      message = "loaded";
    } catch (const fx::LoadError& e) {
      message = e.what();
    }
    for (const auto& w : words)
      EXPECT_NE(message.find(w.get<std::string>()), std::string::npos)
          << file << ": " << message << "\nlacks: " << w;
  }
}

// Files the fuzzer (fuzz/pt2_fuzzer.cpp) once broke the loader with: each
// loads or is refused, and a loaded one runs or throws fx::Error.
TEST(LoadExported, FuzzRegressionsLoadOrFailCleanly) {
  const fs::path dir = fs::path(FXCPP_PT2_FUZZ_CORPUS) / "regressions";
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    try {
      fx::ExportedProgram ep = fx::load_exported(entry.path().string());
      std::vector<c10::IValue> inputs;
      for (fx::Node* n : ep.graph().nodes())
        if (const auto* m = n->meta().get<fx::passes::TensorMetadata>("tensor_meta");
            m && n->op() == fx::Op::placeholder)
          for (const auto& s : ep.graph_signature().input_specs)
            if (s.name == n->name() && s.kind == fx::InputSpec::Kind::user_input)
              inputs.emplace_back(torch::zeros(m->shape, torch::TensorOptions().dtype(m->dtype)));
      ep.run_flat(inputs);
    } catch (const fx::Error&) {
    }
  }
  EXPECT_GE(files, 1u);
}

TEST(LoadExported, RefusesEveryTruncationWithLoadError) {
  if (!fs::exists(kData + "/mutations.pt2")) GTEST_SKIP() << "pt2_programs.py did not run";
  std::ifstream in(kData + "/mutations.pt2", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); n += 97) {
    try {
      fx::load_exported_from_bytes(std::string_view(bytes).substr(0, n), "cut");
    } catch (const fx::LoadError&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, (bytes.size() + 96) / 97);
}

}  // namespace
