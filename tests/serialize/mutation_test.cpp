// fx::load on thousands of corrupted files: each one either loads or throws
// fx::LoadError; nothing else escapes, nothing crashes (this test runs under
// ASan and UBSan too). The mutations are random but seeded, so a failure
// reproduces. Files that once broke the loader are kept in
// fuzz_corpus/ and load here too.
#include <fx/fx.h>
#include <fx/graph_module_file.h>
#include <fx/nn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace {

using fx::Value;
using Json = nlohmann::ordered_json;

struct Small : fx::Module {
  std::shared_ptr<fx::nn::Linear> fc;
  at::Tensor w;
  Small() : fx::Module("Small") {
    fc = register_module("fc", std::make_shared<fx::nn::Linear>(4, 3));
    w = register_parameter("w", torch::randn({3}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value h = (*fc)(in[0]) + w;
    return Value::tuple({fx::call("torch.relu", h), h.sum(fx::kw("dim", -1))});
  }
};

std::string valid_file() {
  Small m;
  return fx::save_to_bytes(*fx::symbolic_trace(m));
}

// Loads; returns an empty string, or what escaped other than fx::LoadError.
std::string escaped(const std::string& bytes) {
  try {
    fx::load_from_bytes(bytes, "mutant.fxg");
  } catch (const fx::LoadError&) {
  } catch (const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  }
  return "";
}

struct Archive {
  std::vector<std::pair<std::string, std::string>> records;
  static Archive read(const std::string& bytes) {
    std::istringstream in(bytes);
    caffe2::serialize::PyTorchStreamReader r(&in);
    Archive a;
    for (const auto& name : r.getAllRecords()) {
      if (name == "version") continue;
      auto [data, size] = r.getRecord(name);
      a.records.emplace_back(name, std::string(static_cast<const char*>(data.get()), size));
    }
    return a;
  }
  std::string write() const {
    std::string out;
    caffe2::serialize::PyTorchStreamWriter w([&](const void* p, size_t n) {
      out.append(static_cast<const char*>(p), n);
      return n;
    });
    for (const auto& [name, data] : records) w.writeRecord(name, data.data(), data.size());
    w.writeEndOfFile();
    return out;
  }
  std::string& record(const std::string& name) {
    for (auto& [n, d] : records)
      if (n == name) return d;
    throw std::runtime_error("no record " + name);
  }
};

// Every value in a JSON tree, by pointer, for picking one at random.
void collect(Json& j, std::vector<Json*>& out) {
  out.push_back(&j);
  if (j.is_structured())
    for (auto& child : j) collect(child, out);
}

Json random_value(std::mt19937& rng) {
  switch (rng() % 9) {
    case 0: return nullptr;
    case 1: return -1;
    case 2: return 1ll << 62;
    case 3: return "x";
    case 4: return Json::array();
    case 5: return Json::object();
    case 6: return Json{{"node", "nope"}};
    case 7: return Json{{"tuple", Json::array({1, "a"})}};
    default: return 0.5;
  }
}

TEST(GraphModuleFileMutations, CorruptedBytesGiveLoadErrorOnly) {
  const std::string good = valid_file();
  ASSERT_EQ(escaped(good), "");
  std::mt19937 rng(1234);
  for (int i = 0; i < 1500; ++i) {
    std::string bad = good;
    switch (i % 3) {
      case 0:  // flip bytes
        for (int k = 0, n = 1 + rng() % 8; k < n; ++k) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
        break;
      case 1:  // truncate
        bad.resize(rng() % bad.size());
        break;
      default:  // overwrite a run with a random byte
        for (size_t at = rng() % bad.size(), k = 0, n = 1 + rng() % 64; k < n && at + k < bad.size(); ++k)
          bad[at + k] = static_cast<char>(rng());
    }
    std::string what = escaped(bad);
    ASSERT_EQ(what, "") << "mutation " << i;
  }
}

TEST(GraphModuleFileMutations, CorruptedJsonAndPickleGiveLoadErrorOnly) {
  const Archive good = Archive::read(valid_file());
  std::mt19937 rng(99);
  for (int i = 0; i < 1500; ++i) {
    Archive a = good;
    if (i % 4 == 0) {  // the pickle, byte by byte, inside a valid archive
      std::string& pkl = a.record("data.pkl");
      for (int k = 0, n = 1 + rng() % 4; k < n; ++k) pkl[rng() % pkl.size()] = static_cast<char>(rng());
    } else if (i % 4 == 1) {  // the JSON text
      std::string& text = a.record("graph.json");
      for (int k = 0, n = 1 + rng() % 4; k < n; ++k) text[rng() % text.size()] = "{}[],:\"0a-.eE \\"[rng() % 15];
    } else {  // one JSON value replaced by a value of another kind
      std::string& text = a.record("graph.json");
      Json j = Json::parse(text);
      for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
        std::vector<Json*> values;  // afresh: a replaced value takes its children with it
        collect(j, values);
        *values[rng() % values.size()] = random_value(rng);
      }
      text = j.dump();
    }
    std::string what = escaped(a.write());
    ASSERT_EQ(what, "") << "mutation " << i;
  }
}

TEST(GraphModuleFileMutations, CorpusOfPastCrashes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FXCPP_FUZZ_CORPUS);
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    EXPECT_EQ(escaped(bytes.str()), "") << entry.path();
    ++n;
  }
  EXPECT_GT(n, 0u);
}

}  // namespace
