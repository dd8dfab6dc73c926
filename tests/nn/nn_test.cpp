// fx::nn against torch.nn 2.14: repr, state dict keys and shapes, outputs on
// Python's state dict and inputs (data from oracle.py), deep copies, saving
// for Python (read back by roundtrip.py), tracing a model that uses every
// leaf module, and constructor arguments (fx::module_spec against
// python/fxcpp/modules.py's describe).
#include <fx/fx.h>
#include <fx/graph_module.h>
#include <fx/module_spec.h>
#include <fx/nn.h>
#include <fx/state_dict.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace {

using namespace fx::nn;
using fx::kw;
using fx::Value;
using IO = std::map<std::string, at::Tensor>;
using Vec = std::vector<int64_t>;

template <class M, class... A>
std::shared_ptr<M> make(A&&... a) {
  return std::make_shared<M>(std::forward<A>(a)...);
}

std::string data(const std::string& file) { return std::string(FXCPP_NN_DATA) + "/" + file; }

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(data("expected.json"));
    return f ? nlohmann::json::parse(f) : nlohmann::json();
  }();
  return j;
}

struct Case {
  std::function<std::shared_ptr<fx::Module>()> make;
  // Calls the module on the inputs (fresh copies of in.0, in.1, ...); by default positionally.
  std::function<Value(fx::Module&, IO&)> call;
};

Value positional(fx::Module& m, IO& in) {
  std::vector<Value> args;
  for (int i = 0; in.count("in." + std::to_string(i)); ++i)
    args.emplace_back(in.at("in." + std::to_string(i)));
  return m.call(std::move(args));
}

// The modules of cases.py, built as Python builds them.
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"relu6", {[] { return make<ReLU6>(); }}},
      {"relu6_inplace", {[] { return make<ReLU6>(true); }}},
      {"gelu", {[] { return make<GELU>(); }}},
      {"gelu_tanh", {[] { return make<GELU>("tanh"); }}},
      {"layernorm", {[] { return make<LayerNorm>(Vec{8}); }}},
      {"layernorm2", {[] {
         return make<LayerNorm>(Vec{3, 8}, 1e-3, false);
       }}},
      {"mha", {[] { return make<MultiheadAttention>(8, 2); }}},
      {"mha_kv", {[] { return make<MultiheadAttention>(8, 2, 0.0, true, true, true, 6, 4, true); }}},
      {"mha_self_masks",
       {[] {
          return make<MultiheadAttention>(8, 2, 0.0, true, false, false, std::nullopt, std::nullopt, true);
        },
        [](fx::Module& m, IO& in) {
          Value x = in.at("in.0");
          return m(x, x, x, kw("key_padding_mask", in.at("in.1")), kw("attn_mask", in.at("in.2")),
                   kw("need_weights", false));
        }}},
      {"mha_causal",
       {[] { return make<MultiheadAttention>(8, 2); },
        [](fx::Module& m, IO& in) {
          Value x = in.at("in.0");
          return m(x, x, x, kw("attn_mask", in.at("in.1")), kw("need_weights", false), kw("is_causal", true));
        }}},
      {"mha_shared_kv",
       {[] { return make<MultiheadAttention>(8, 2); },
        [](fx::Module& m, IO& in) {
          Value kv = in.at("in.1");
          return m(in.at("in.0"), kv, kv, kw("average_attn_weights", false));
        }}},
      {"hardswish", {[] { return make<Hardswish>(); }}},
      {"hardsigmoid", {[] { return make<Hardsigmoid>(); }}},
      {"silu", {[] { return make<SiLU>(); }}},
      {"sigmoid", {[] { return make<Sigmoid>(); }}},
      {"tanh", {[] { return make<Tanh>(); }}},
      {"softmax", {[] { return make<Softmax>(1); }}},
      {"logsoftmax", {[] { return make<LogSoftmax>(-1); }}},
      {"dropout", {[] { return make<Dropout>(0.3); }}},
      {"dropout2d", {[] { return make<Dropout2d>(0.2); }}},
      {"modulelist", {[] {
         return make<ModuleList>(std::vector<std::shared_ptr<fx::Module>>{make<Linear>(2, 3), make<ReLU>(),
                                                                          make<BatchNorm2d>(3)});
       }}},
      {"moduledict", {[] {
         return make<ModuleDict>(std::vector<std::pair<std::string, std::shared_ptr<fx::Module>>>{
             {"conv", make<Conv2d>(1, 2, Vec{3})}, {"act", make<GELU>()}});
       }}},
      {"bilinear", {[] { return make<Bilinear>(3, 4, 5); }}},
      {"conv1d", {[] { return make<Conv1d>(4, 6, Vec{3}, Vec{2}, Vec{1}); }}},
      {"conv1d_reflect",
       {[] { return make<Conv1d>(4, 4, Vec{3}, Vec{1}, Vec{2}, Vec{1}, 2, false, "reflect"); }}},
      {"conv2d", {[] {
         return make<Conv2d>(3, 4, Vec{3, 2}, Vec{2, 1}, Vec{1, 0}, Vec{1, 2});
       }}},
      {"conv2d_circular",
       {[] { return make<Conv2d>(2, 4, Vec{3}, Vec{1}, Vec{1}, Vec{1}, 1, true, "circular"); }}},
      {"conv3d", {[] { return make<Conv3d>(2, 4, Vec{3}, Vec{1}, Vec{1}); }}},
      {"convt1d", {[] { return make<ConvTranspose1d>(4, 2, Vec{3}, Vec{2}, Vec{1}, Vec{1}); }}},
      {"convt2d",
       {[] { return make<ConvTranspose2d>(4, 6, Vec{3}, Vec{2}, Vec{1}, Vec{0}, 2); },
        [](fx::Module& m, IO& in) {
          return m(in.at("in.0"), kw("output_size", Value::list({10, 10})));
        }}},
      {"bn1d", {[] { return make<BatchNorm1d>(4); }}},
      {"bn2d", {[] { return make<BatchNorm2d>(3, 1e-3, std::nullopt); }}},
      {"bn2d_plain", {[] { return make<BatchNorm2d>(3, 1e-5, 0.1, false, false); }}},
      {"bn3d", {[] { return make<BatchNorm3d>(2, 1e-5, 0.3); }}},
      {"groupnorm", {[] { return make<GroupNorm>(2, 4); }}},
      {"instancenorm", {[] { return make<InstanceNorm2d>(4, 1e-5, 0.1, true, true); }}},
      {"instancenorm_unbatched", {[] { return make<InstanceNorm2d>(3); }}},
      {"embedding", {[] { return make<Embedding>(10, 4, -1); }}},
      {"embedding_maxnorm", {[] { return make<Embedding>(10, 4, std::nullopt, 1.0, 1.5); }}},
      {"embeddingbag", {[] { return make<EmbeddingBag>(10, 3, std::nullopt, 2.0, false, "sum"); }}},
      {"embeddingbag_offsets",
       {[] { return make<EmbeddingBag>(10, 3, std::nullopt, 2.0, false, "max", false, false, 0); }}},
      {"leakyrelu", {[] { return make<LeakyReLU>(0.2); }}},
      {"mish", {[] { return make<Mish>(); }}},
      {"unflatten", {[] {
         return make<Unflatten>(1, Vec{2, 4});
       }}},
      {"upsample", {[] { return make<Upsample>(Upsample::Options{.scale_factor = {2.0}}); }}},
      {"upsample_bilinear", {[] {
         return make<Upsample>(Upsample::Options{.size = {5, 7}, .mode = "bilinear", .align_corners = false});
       }}},
      {"pixelshuffle", {[] { return make<PixelShuffle>(2); }}},
      {"lstm", {[] { return make<LSTM>(4, 6, 2, true, false, 0.0, true); }}},
      {"lstm_proj", {[] { return make<LSTM>(4, 6, 1, true, true, 0.0, false, 3); }}},
      {"lstm_unbatched",
       {[] { return make<LSTM>(4, 5, 1, false); },
        [](fx::Module& m, IO& in) {
          return m(in.at("in.0"), Value::tuple({in.at("in.1.0"), in.at("in.1.1")}));
        }}},
      {"gru", {[] { return make<GRU>(4, 5, 2, true, false, 0.25); }}},
      {"gru_unbatched", {[] { return make<GRU>(4, 5, 1, true, true, 0.0, true); }}},
      {"transformer", {[] { return make<TransformerEncoderLayer>(8, 2, 16); }}},
      {"transformer_masks",
       {[] { return make<TransformerEncoderLayer>(8, 2, 16, 0.1, "relu", 1e-5, true); },
        [](fx::Module& m, IO& in) {
          return m(in.at("in.0"), kw("src_mask", in.at("in.1")), kw("src_key_padding_mask", in.at("in.2")));
        }}},
      {"transformer_gelu",
       {[] { return make<TransformerEncoderLayer>(8, 2, 16, 0.2, "gelu", 1e-5, true, true); }}},
  };
  return c;
}

IO read_io(const std::string& name) {
  IO io;
  for (auto& [k, v] : fx::read_state_dict(data(name + ".io.pt"))) io[k] = v;
  return io;
}

// Tensors of a (nested) output under Python's dotted names, and its structure.
void flatten(const Value& v, const std::string& prefix, IO& out, std::string& structure) {
  if (v.is_none()) {
    structure += "None";
  } else if (v.is_sequence() || v.ivalue().isTuple()) {
    auto items = v.items();
    structure += "(";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) structure += ", ";
      flatten(items[i], prefix + "." + std::to_string(i), out, structure);
    }
    structure += ")";
  } else {
    out[prefix] = v.tensor();
    structure += "T";
  }
}

std::pair<IO, std::string> run(const std::string& name, fx::Module& m) {
  IO in = read_io(name);
  for (auto& [k, v] : in) v = v.clone();  // inplace modules write into their input
  const Case& c = cases().at(name);
  torch::NoGradGuard no_grad;
  Value out = c.call ? c.call(m, in) : positional(m, in);
  IO flat;
  std::string structure;
  flatten(out, "out", flat, structure);
  return {flat, structure};
}

std::string python_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
      return "torch.float32";
    case c10::kDouble:
      return "torch.float64";
    case c10::kLong:
      return "torch.int64";
    default:
      return c10::toString(t);
  }
}

class NnCase : public ::testing::TestWithParam<std::string> {};

TEST_P(NnCase, MatchesTorchNn) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  const std::string name = GetParam();
  const auto& e = expected()["cases"][name];
  ASSERT_FALSE(e.is_null()) << name << " is not in cases.py";
  auto m = cases().at(name).make();
  EXPECT_EQ(m->repr(), e["repr"].get<std::string>());

  auto sd = fx::state_dict(*m);
  ASSERT_EQ(sd.size(), e["keys"].size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(sd[i].first, e["keys"][i][0].get<std::string>());
    EXPECT_EQ(sd[i].second.sizes().vec(), e["keys"][i][1].get<std::vector<int64_t>>()) << sd[i].first;
    EXPECT_EQ(python_dtype(sd[i].second.scalar_type()), e["keys"][i][2].get<std::string>()) << sd[i].first;
  }

  fx::load_state_dict(*m, data(name + ".pt"));
  fx::save_state_dict(*m, data(name + ".cpp.pt"));  // for roundtrip.py
  m->eval();
  if (!e.contains("structure")) return;
  auto [out, structure] = run(name, *m);
  EXPECT_EQ(structure, e["structure"].get<std::string>());
  IO io = read_io(name);
  for (auto& [k, v] : io) {
    if (k.rfind("out", 0) != 0) continue;
    ASSERT_TRUE(out.count(k)) << k;
    EXPECT_EQ(out[k].sizes(), v.sizes()) << k;
    EXPECT_TRUE(torch::allclose(out[k], v, 1e-4, 1e-5)) << name << " " << k << "\n" << out[k] << "\n" << v;
  }

  // A deep copy computes the same and shares no storage.
  auto copy = std::dynamic_pointer_cast<fx::Module>(m->clone());
  ASSERT_TRUE(copy) << name;
  EXPECT_EQ(copy->repr(), m->repr());
  EXPECT_FALSE(copy->is_training());
  auto copied = fx::state_dict(*copy);
  auto own = fx::state_dict(*m);
  ASSERT_EQ(copied.size(), own.size());
  for (size_t i = 0; i < own.size(); ++i) {
    EXPECT_EQ(copied[i].first, own[i].first);
    EXPECT_TRUE(torch::equal(copied[i].second, own[i].second)) << copied[i].first;
    EXPECT_NE(copied[i].second.data_ptr(), own[i].second.data_ptr()) << copied[i].first;
  }
  auto [out_copy, structure_copy] = run(name, *copy);
  auto [out_again, structure_again] = run(name, *m);
  EXPECT_EQ(structure_copy, structure_again);
  for (auto& [k, v] : out_again) EXPECT_TRUE(torch::equal(out_copy[k], v)) << name << " clone " << k;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : cases()) names.push_back(k);
  return names;
}
INSTANTIATE_TEST_SUITE_P(Torch, NnCase, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(Nn, EveryPythonCaseIsBuilt) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  for (const auto& [name, v] : expected()["cases"].items()) EXPECT_TRUE(cases().count(name)) << name;
}

// F.multi_head_attention_forward with a static key: it must be
// (bsz * num_heads, source length, head_dim); another rank is an fx::Error
// that says so, as is a wrong first size.
TEST(Nn, StaticKeyOfAnotherShapeIsAnError) {
  torch::NoGradGuard no_grad;
  auto w = torch::randn({24, 8}), b = torch::zeros({24}), ow = torch::randn({8, 8}), ob = torch::zeros({8});
  auto x = torch::randn({5, 3, 8});
  auto attend = [&](const at::Tensor& static_k) {
    return fx::call_function("torch.nn.functional.multi_head_attention_forward",
                             {x, x, x, 8, 2, w, b, Value(), Value(), false, 0.0, ow, ob},
                             {{"static_k", static_k}, {"static_v", torch::randn({6, 5, 4})}});
  };
  auto out = attend(torch::randn({6, 5, 4}))[0].tensor();  // 3 * 2 heads of 4
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_THAT(
      [&] {
        attend(torch::randn({6, 20}));
      },
      testing::ThrowsMessage<fx::Error>(testing::HasSubstr("expecting static_k of 3 dimensions")));
  EXPECT_THAT(
      [&] {
        attend(torch::randn({4, 5, 4}));
      },
      testing::ThrowsMessage<fx::Error>(testing::HasSubstr("expecting static_k.size(0) of 6, but got 4")));
}

// ---- containers ---------------------------------------------------------------

TEST(Nn, ModuleListAndDict) {
  ModuleList list({make<Linear>(2, 3), make<ReLU>()});
  list.append(make<Tanh>());
  EXPECT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2].type_name(), "torch.nn.Tanh");
  EXPECT_EQ(list[-3].type_name(), "torch.nn.Linear");
  EXPECT_THROW(list[3], fx::Error);
  EXPECT_THROW(list(torch::ones({2})), fx::Error);
  std::vector<std::string> names;
  for (const auto& c : list.named_children()) names.push_back(c.key());
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "2"}));

  ModuleDict dict({{"b", make<ReLU>()}, {"a", make<Sigmoid>()}});
  dict.insert("b", make<Tanh>());  // replaces, keeps the position
  EXPECT_EQ(dict.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(dict["b"].type_name(), "torch.nn.Tanh");
  EXPECT_TRUE(dict.contains("a"));
  EXPECT_THROW(dict["c"], fx::Error);
  EXPECT_EQ(dict.items()[1].first, "a");
  EXPECT_EQ(dict.repr(), "ModuleDict(\n  (b): Tanh()\n  (a): Sigmoid()\n)");
}

TEST(Nn, ContainerCloneCopiesChildren) {
  Sequential seq({make<Linear>(2, 2), make<Dropout>(0.5)});
  seq.eval();
  auto copy = std::dynamic_pointer_cast<Sequential>(seq.clone());
  ASSERT_TRUE(copy);
  EXPECT_FALSE(copy->is_training());
  EXPECT_FALSE((*copy)[1].is_training());
  auto& a = dynamic_cast<Linear&>(seq[0]);
  auto& b = dynamic_cast<Linear&>((*copy)[0]);
  EXPECT_TRUE(torch::equal(a.weight, b.weight));
  EXPECT_NE(a.weight.data_ptr(), b.weight.data_ptr());
  at::Tensor x = torch::randn({3, 2});
  EXPECT_TRUE(torch::equal(seq(x).tensor(), (*copy)(x).tensor()));
}

// ---- bad input ----------------------------------------------------------------

TEST(StateDict, WrongShapesNameTheKeyAndFile) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  LayerNorm wrong(Vec{4});  // layernorm.pt holds (8,)
  at::Tensor before = wrong.weight.clone();
  try {
    fx::load_state_dict(wrong, data("layernorm.pt"));
    FAIL() << "no error";
  } catch (const fx::Error& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("size mismatch for weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layernorm.pt"), std::string::npos) << msg;
  }
  EXPECT_TRUE(torch::equal(wrong.weight, before));  // nothing copied
}

TEST(StateDict, MissingAndUnexpectedKeys) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  LayerNorm no_affine(Vec{8}, 1e-5, false);
  try {
    fx::load_state_dict(no_affine, data("layernorm.pt"));
    FAIL() << "no error";
  } catch (const fx::Error& err) {
    EXPECT_NE(std::string(err.what()).find("Unexpected key(s) in state_dict: \"weight\", \"bias\""),
              std::string::npos)
        << err.what();
  }
  EXPECT_NO_THROW(fx::load_state_dict(no_affine, data("layernorm.pt"), /*strict=*/false));
  BatchNorm1d bn(4);
  EXPECT_THROW(fx::load_state_dict(bn, data("layernorm2.pt")), fx::Error);  // nothing in common
}

TEST(StateDict, DtypeMismatch) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  Embedding emb(10, 4);
  emb.to(torch::kDouble);
  EXPECT_THROW(fx::load_state_dict(emb, data("embedding.pt")), fx::Error);
}

TEST(StateDict, NotAStateDict) {
  const std::string dir = ::testing::TempDir();
  { std::ofstream(dir + "/junk.pt") << "not a zip archive"; }
  Linear lin(2, 2);
  EXPECT_THROW(fx::load_state_dict(lin, dir + "/junk.pt"), fx::Error);
  EXPECT_THROW(fx::load_state_dict(lin, dir + "/does_not_exist.pt"), fx::Error);
  EXPECT_THROW(fx::save_state_dict(lin, dir + "/no/such/dir/x.pt"), fx::Error);
  // A zip archive of LibTorch's own pickle of a list, not a dict (its int list is refused).
  auto bytes = torch::pickle_save(c10::IValue(c10::List<int64_t>({1, 2})));
  std::ofstream(dir + "/list.pt", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  try {
    fx::load_state_dict(lin, dir + "/list.pt");
    FAIL() << "no error";
  } catch (const fx::Error& err) {
    EXPECT_NE(std::string(err.what()).find("list.pt"), std::string::npos) << err.what();
  }
}

TEST(StateDict, SaveAndLoadInCpp) {
  const std::string path = ::testing::TempDir() + "/lstm.pt";
  LSTM a(3, 4, 2), b(3, 4, 2);
  fx::save_state_dict(a, path);
  fx::load_state_dict(b, path);
  for (size_t i = 0; i < a.flat_weights().size(); ++i)
    EXPECT_TRUE(torch::equal(a.flat_weights()[i], b.flat_weights()[i]));
}

// ---- tracing ------------------------------------------------------------------

// models.py's AllModules.
struct AllModules : fx::Module {
  std::shared_ptr<Conv1d> conv1d;
  std::shared_ptr<ConvTranspose1d> convt1d;
  std::shared_ptr<BatchNorm1d> bn1d;
  std::shared_ptr<Conv2d> conv2d;
  std::shared_ptr<BatchNorm2d> bn2d;
  std::shared_ptr<ModuleList> acts;
  std::shared_ptr<ModuleDict> norms;
  std::shared_ptr<Sequential> up;
  std::shared_ptr<Conv3d> conv3d;
  std::shared_ptr<BatchNorm3d> bn3d;
  std::shared_ptr<Flatten> flatten;
  std::shared_ptr<Unflatten> unflatten;
  std::shared_ptr<Identity> identity;
  std::shared_ptr<Linear> linear;
  std::shared_ptr<Bilinear> bilinear;
  std::shared_ptr<LayerNorm> layernorm;
  std::shared_ptr<MultiheadAttention> mha;
  std::shared_ptr<TransformerEncoderLayer> encoder;
  std::shared_ptr<LSTM> lstm;
  std::shared_ptr<GRU> gru;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<EmbeddingBag> bag;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Softmax> softmax;
  std::shared_ptr<LogSoftmax> log_softmax;

  AllModules() : fx::Module("AllModules", {"x", "tokens"}) {
    conv1d = register_module("conv1d", make<Conv1d>(4, 4, Vec{3}, Vec{1}, Vec{1}));
    convt1d = register_module("convt1d", make<ConvTranspose1d>(4, 4, Vec{1}));
    bn1d = register_module("bn1d", make<BatchNorm1d>(4));
    conv2d = register_module("conv2d", make<Conv2d>(4, 8, Vec{3}, Vec{1}, Vec{1}));
    bn2d = register_module("bn2d", make<BatchNorm2d>(8));
    acts = register_module(
        "acts", make<ModuleList>(std::vector<std::shared_ptr<fx::Module>>{
                    make<ReLU>(), make<ReLU6>(), make<GELU>(), make<LeakyReLU>(0.1), make<SiLU>(),
                    make<Mish>(), make<Hardswish>(), make<Hardsigmoid>(), make<Sigmoid>(), make<Tanh>()}));
    norms = register_module("norms",
                            make<ModuleDict>(std::vector<std::pair<std::string, std::shared_ptr<fx::Module>>>{
                                {"group", make<GroupNorm>(2, 8)},
                                {"instance", make<InstanceNorm2d>(8)},
                                {"drop", make<Dropout2d>(0.1)}}));
    up = register_module("up", make<Sequential>(std::vector<std::shared_ptr<fx::Module>>{
                                   make<Upsample>(Upsample::Options{.scale_factor = {2.0}}),
                                   make<PixelShuffle>(2), make<ConvTranspose2d>(2, 2, Vec{2}, Vec{2})}));
    conv3d = register_module("conv3d", make<Conv3d>(1, 1, Vec{1}));
    bn3d = register_module("bn3d", make<BatchNorm3d>(1));
    flatten = register_module("flatten", make<Flatten>(2));
    unflatten = register_module("unflatten", make<Unflatten>(1, Vec{2, 4}));
    identity = register_module("identity", make<Identity>());
    linear = register_module("linear", make<Linear>(8, 8));
    bilinear = register_module("bilinear", make<Bilinear>(8, 8, 8));
    layernorm = register_module("layernorm", make<LayerNorm>(Vec{8}));
    mha = register_module("mha", make<MultiheadAttention>(8, 2));
    encoder = register_module("encoder", make<TransformerEncoderLayer>(8, 2, 16));
    lstm = register_module("lstm", make<LSTM>(8, 8));
    gru = register_module("gru", make<GRU>(8, 8));
    embedding = register_module("embedding", make<Embedding>(10, 8));
    bag = register_module("bag", make<EmbeddingBag>(10, 8));
    dropout = register_module("dropout", make<Dropout>(0.1));
    softmax = register_module("softmax", make<Softmax>(-1));
    log_softmax = register_module("log_softmax", make<LogSoftmax>(-1));
  }

  Value forward(const std::vector<Value>& in) override {
    Value x = in[0], tokens = in[1];
    Value s = (*bn1d)((*convt1d)((*conv1d)(x)));
    Value y = (*bn2d)((*conv2d)(s.unsqueeze(-1)));
    for (const auto& act : *acts) y = (*act)(y);
    y = (*norms)["drop"]((*norms)["instance"]((*norms)["group"](y)));
    y = (*up)(y);
    y = (*bn3d)((*conv3d)(y.unsqueeze(1))).squeeze(1);
    Value z = (*unflatten)((*flatten)(y)).flatten(1, 2).transpose(1, 2);
    z = (*identity)((*linear)(z));
    z = (*layernorm)((*bilinear)(z, z));
    z = (*mha)(z, z, z, kw("need_weights", false))[0];
    z = (*encoder)(z);
    z = (*lstm)(z)[0];
    z = (*gru)(z)[0];
    // One call per statement: C++ leaves the order of operands' evaluation open, Python does not.
    z = z + (*embedding)(tokens);
    z = z + (*bag)(tokens).unsqueeze(1);
    Value log_probs = (*log_softmax)((*dropout)(z));
    return log_probs + (*softmax)(z);
  }
};

TEST(Nn, TraceEveryLeafModuleAsTorchFx) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  AllModules model;
  auto gm = fx::symbolic_trace(model);
  EXPECT_EQ(gm->graph().to_string(), expected()["trace"]["graph"].get<std::string>());
  EXPECT_EQ(gm->code(), expected()["trace"]["code"].get<std::string>());
}

// ---- constructor arguments (fx::module_spec, fx::make_module) -----------------

// cases.py's SPEC_CASES.
const std::map<std::string, std::function<std::shared_ptr<fx::Module>()>>& spec_cases() {
  using Modules = std::vector<std::shared_ptr<fx::Module>>;
  static const std::map<std::string, std::function<std::shared_ptr<fx::Module>()>> c = {
      {"maxpool1d", [] { return make<MaxPool1d>(2, std::nullopt, 0, 1, false, true); }},
      {"maxpool2d",
       [] {
         return make<MaxPool2d>(PoolArg{3, 2}, PoolArg{2, 1}, 1, PoolArg{1, 2});
       }},
      {"avgpool2d", [] { return make<AvgPool2d>(3, PoolArg(2), 1, false, false, 4); }},
      {"adaptiveavgpool1d", [] { return make<AdaptiveAvgPool1d>(4); }},
      {"adaptiveavgpool2d",
       [] {
         return make<AdaptiveAvgPool2d>(PoolArg{std::nullopt, 7});
       }},
      {"upsample_tuple",
       [] {
         return make<Upsample>(Upsample::Options{.scale_factor = {2.0, 1.5}});
       }},
      {"leakyrelu_third", [] { return make<LeakyReLU>(1.0 / 3); }},
      {"mha_nobias", [] { return make<MultiheadAttention>(8, 2, 0.1, false); }},
      {"embedding_padding", [] { return make<Embedding>(6, 2, 2, 2.0, 2.0, true, true); }},
      {"embeddingbag_options", [] { return make<EmbeddingBag>(5, 3, 1.5, 3.0, true, "mean", false, true); }},
      {"plain",
       [] {  // GraphModule's container class is private: make_module's stands for Python's bare nn.Module
         auto m = std::dynamic_pointer_cast<fx::Module>(fx::make_module({"torch.nn.Module", {}}));
         m->register_module("out_proj", make<NonDynamicallyQuantizableLinear>(4, 2, false));
         m->register_module("seq", make<Sequential>(Modules{make<Identity>()}));
         return m;
       }},
      {"sequential",
       [] {
         return make<Sequential>(
             Modules{make<Linear>(4, 4, false), make<Tanh>(), make<ModuleList>(Modules{make<ReLU>(true)})});
       }},
  };
  return c;
}

// module_specs.py's roots(): [(path, module)] of a name.
std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> spec_roots(const std::string& name) {
  if (name == "all_modules") {  // the model's own class is not described, its children are
    std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> out;
    for (const auto& c : std::make_shared<AllModules>()->named_children())
      out.emplace_back(c.key(), c.value());
    return out;
  }
  if (spec_cases().count(name)) return {{"", spec_cases().at(name)()}};
  return {{"", cases().at(name).make()}};
}

bool is_container(const std::string& type) {
  return type == "torch.nn.Module" || type == "torch.nn.Sequential" || type == "torch.nn.ModuleList" ||
         type == "torch.nn.ModuleDict";
}

// module_specs.py's walk(): the specs of m and, through containers, of its children.
void walk_specs(const torch::nn::Module& m, const std::string& path,
                std::vector<std::pair<std::string, fx::ModuleSpec>>& out) {
  fx::ModuleSpec spec = fx::module_spec(m);
  bool container = is_container(spec.type);
  out.emplace_back(path, std::move(spec));
  if (!container) return;
  for (const auto& c : m.named_children())
    walk_specs(*c.value(), path.empty() ? c.key() : path + "." + c.key(), out);
}

// module_specs.py's rebuild(): m constructed anew from its spec, containers with their children.
std::shared_ptr<fx::Module> rebuild(const torch::nn::Module& m) {
  auto made = std::dynamic_pointer_cast<fx::Module>(fx::make_module(fx::module_spec(m)));
  if (!made || !is_container(made->type_name())) return made;
  for (const auto& c : m.named_children()) {
    auto child = rebuild(*c.value());
    if (auto* seq = dynamic_cast<Sequential*>(made.get()))
      seq->append(child);
    else if (auto* list = dynamic_cast<ModuleList*>(made.get()))
      list->append(child);
    else if (auto* dict = dynamic_cast<ModuleDict*>(made.get()))
      dict->insert(c.key(), child);
    else
      made->register_module(c.key(), child);
  }
  return made;
}

// module_specs.py's encode(), read back: {"tuple": [...]} is a tuple; a JSON number with a
// fraction or exponent is a float.
fx::Argument spec_value(const nlohmann::json& j) {
  if (j.is_null()) return fx::None;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_string()) return j.get<std::string>();
  fx::Tuple t;
  for (const auto& item : j.at("tuple")) t.items.push_back(spec_value(item));
  return t;
}

// The same encoding, for failure messages (a float prints with its fraction: 1.0).
nlohmann::json spec_json(const fx::Argument& a) {
  if (a.is<bool>()) return a.get<bool>();
  if (a.is<int64_t>()) return a.get<int64_t>();
  if (a.is<double>()) return a.get<double>();
  if (a.is<std::string>()) return a.get<std::string>();
  if (a.is<fx::Tuple>()) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : a.get<fx::Tuple>().items) items.push_back(spec_json(item));
    return {{"tuple", items}};
  }
  return a.is_none() ? nlohmann::json() : nlohmann::json(std::string("<") + std::string(a.kind_name()) + ">");
}

std::vector<std::pair<std::string, std::vector<int64_t>>> state_shapes(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (const auto& [k, v] : fx::state_dict(m)) out.emplace_back(k, v.sizes().vec());
  return out;
}

class NnSpec : public ::testing::TestWithParam<std::string> {};

TEST_P(NnSpec, MatchesPythonDescribeAndRebuilds) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  const std::string name = GetParam();
  const auto& e = expected()["specs"][name];
  ASSERT_FALSE(e.is_null()) << name << " is not in module_specs.py's roots()";
  std::vector<std::pair<std::string, fx::ModuleSpec>> specs;
  for (const auto& [path, m] : spec_roots(name)) {
    walk_specs(*m, path, specs);

    auto made = rebuild(*m);
    ASSERT_TRUE(made) << path;
    EXPECT_EQ(made->repr(), std::dynamic_pointer_cast<fx::Module>(m)->repr()) << path;
    EXPECT_EQ(state_shapes(*made), state_shapes(*m)) << path;
  }
  ASSERT_EQ(specs.size(), e.size()) << e.dump();
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& [path, spec] = specs[i];
    EXPECT_EQ(path, e[i][0].get<std::string>());
    EXPECT_EQ(spec.type, e[i][1].get<std::string>()) << path;
    const auto& kwargs = e[i][2];
    ASSERT_EQ(spec.kwargs.size(), kwargs.size()) << path << " " << kwargs.dump();
    for (size_t k = 0; k < kwargs.size(); ++k) {
      const auto& [arg, value] = spec.kwargs[k];
      EXPECT_EQ(arg, kwargs[k][0].get<std::string>()) << path;
      fx::Argument want = spec_value(kwargs[k][1]);
      EXPECT_EQ(value.kind_name(), want.kind_name()) << path << " " << arg;
      EXPECT_TRUE(value == want) << path << " " << arg << ": " << spec_json(value).dump() << " is not "
                                 << kwargs[k][1].dump();
    }
  }
}

std::vector<std::string> spec_names() {
  std::vector<std::string> names = case_names();
  for (const auto& [k, v] : spec_cases()) names.push_back(k);
  names.push_back("all_modules");
  return names;
}
INSTANTIATE_TEST_SUITE_P(Torch, NnSpec, ::testing::ValuesIn(spec_names()),
                         [](const auto& info) { return info.param; });

TEST(ModuleSpec, EveryPythonSpecIsChecked) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  auto names = spec_names();
  for (const auto& [name, v] : expected()["specs"].items())
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

std::string make_module_error(const fx::ModuleSpec& spec) {
  try {
    fx::make_module(spec);
  } catch (const fx::Error& err) {
    return err.what();
  }
  return "no error";
}

TEST(ModuleSpec, EveryTypeIsChecked) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.nn oracle did not run";
  std::set<std::string> seen;
  for (const auto& name : spec_names())
    for (const auto& [path, m] : spec_roots(name)) {
      std::vector<std::pair<std::string, fx::ModuleSpec>> specs;
      walk_specs(*m, path, specs);
      for (const auto& [p, spec] : specs) seen.insert(spec.type);
    }
  for (const auto& type : expected()["spec_types"]) {
    EXPECT_TRUE(seen.count(type.get<std::string>())) << type << " is in no case of module_specs.py";
    EXPECT_THAT(make_module_error({type.get<std::string>(), {}}),
                ::testing::Not(::testing::HasSubstr("unknown module type")));
  }
  EXPECT_EQ(seen.size(), expected()["spec_types"].size())
      << "fxcpp.modules.TYPES lacks a type fx::module_spec gives";
  // fx::nn's traits and Python's list name the same classes: a new module is added to both.
  std::set<std::string> registered, python;
  for (const auto& type : fx::nn::module_traits_types())
    if (type.starts_with("torch.nn.")) registered.insert(type);
  for (const auto& type : expected()["spec_types"]) python.insert(type.get<std::string>());
  EXPECT_EQ(registered, python) << "fx::nn's module traits and python/fxcpp/modules.py's TYPES differ";
}

TEST(ModuleSpec, MissingArgumentsTakePyTorchDefaults) {
  auto made =
      fx::make_module({"torch.nn.Conv2d", {{"in_channels", 3}, {"out_channels", 8}, {"kernel_size", 3}}});
  Conv2d conv(3, 8, Vec{3});
  EXPECT_EQ(std::dynamic_pointer_cast<fx::Module>(made)->repr(), conv.repr());
  fx::ModuleSpec spec = fx::module_spec(*made);
  EXPECT_EQ(spec, fx::module_spec(conv));
  ASSERT_EQ(spec.kwargs.size(), 9u);
  EXPECT_EQ(spec.kwargs[2], (std::pair<std::string, fx::Argument>("kernel_size", fx::tuple({3, 3}))));
  // An int is a float too, as in Python.
  auto dropout = fx::make_module({"torch.nn.Dropout", {{"p", 1}}});
  EXPECT_EQ(dynamic_cast<Dropout&>(*dropout).p, 1.0);
  // GraphModule's plain containers.
  EXPECT_EQ(std::dynamic_pointer_cast<fx::Module>(fx::make_module({"torch.nn.Module", {}}))->repr(),
            "Module()");
}

TEST(ModuleSpec, BadSpecsNameTheTypeAndArgument) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  EXPECT_THAT(make_module_error({"torch.nn.Conv9d", {}}), HasSubstr("unknown module type 'torch.nn.Conv9d'"));
  EXPECT_THAT(
      make_module_error({"torch.nn.Linear", {{"in_features", 2}, {"out_features", 3}, {"biass", true}}}),
      HasSubstr("torch.nn.Linear: unexpected keyword argument 'biass'"));
  EXPECT_THAT(make_module_error({"torch.nn.Linear", {{"in_features", 2}}}),
              HasSubstr("torch.nn.Linear: missing required argument 'out_features'"));
  EXPECT_THAT(
      make_module_error({"torch.nn.Linear", {{"in_features", 2}, {"out_features", 3}, {"in_features", 4}}}),
      HasSubstr("torch.nn.Linear: got multiple values for argument 'in_features'"));
  const fx::Kwargs conv = {{"in_channels", 3}, {"out_channels", 8}};
  auto with = [](fx::Kwargs kwargs, std::string name, fx::Argument value) {
    kwargs.emplace_back(std::move(name), std::move(value));
    return kwargs;
  };
  EXPECT_THAT(
      make_module_error({"torch.nn.Conv2d", with(conv, "kernel_size", "3")}),
      HasSubstr("torch.nn.Conv2d: argument 'kernel_size' must be an int or a tuple of ints, got str"));
  EXPECT_THAT(
      make_module_error({"torch.nn.Conv2d", with(conv, "kernel_size", fx::tuple({3, 1.5}))}),
      HasSubstr("torch.nn.Conv2d: argument 'kernel_size' must be an int or a tuple of ints, got float"));
  EXPECT_THAT(make_module_error({"torch.nn.Linear", {{"in_features", true}, {"out_features", 3}}}),
              HasSubstr("torch.nn.Linear: argument 'in_features' must be an int, got bool"));
  EXPECT_THAT(make_module_error(
                  {"torch.nn.Embedding", {{"num_embeddings", 4}, {"embedding_dim", 2}, {"max_norm", "1"}}}),
              HasSubstr("torch.nn.Embedding: argument 'max_norm' must be a float or None, got str"));
}

TEST(ModuleSpec, ModulesFxcppCannotConstructAreRefusedByName) {
  using ::testing::HasSubstr;
  auto message = [](const torch::nn::Module& m) {
    try {
      fx::module_spec(m);
    } catch (const fx::Error& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message(AllModules()), HasSubstr("AllModules is not a torch.nn module"));
  EXPECT_THAT(message(*torch::nn::Linear(2, 3)), HasSubstr("torch::nn::Linear"));
  auto holder = fx::make_module({"torch.nn.Module", {}});
  holder->register_buffer("scale", torch::ones({2}));
  EXPECT_THAT(message(*holder), HasSubstr("torch.nn.Module with tensors of its own"));
}

}  // namespace

// SkipInit: the constructors draw nothing from the generator (the draws are
// what Python's skip_init avoids), the shapes stay, and the guard restores
// the previous state, nested or not.
TEST(SkipInit, ConstructorsDrawNothingAndGuardsNest) {
  auto construct_all = [] {
    fx::nn::Linear linear(8, 4);
    fx::nn::Bilinear bilinear(3, 3, 2);
    fx::nn::Conv2d conv(3, 8, {3});
    fx::nn::ConvTranspose2d deconv(3, 8, {3});
    fx::nn::Embedding embedding(10, 4);
    fx::nn::MultiheadAttention attention(8, 2, 0.0, true, true);
    fx::nn::LSTM lstm(4, 8);
    EXPECT_EQ(linear.weight.sizes(), (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(conv.weight.sizes(), (std::vector<int64_t>{8, 3, 3, 3}));
    EXPECT_EQ(attention.in_proj_weight.sizes(), (std::vector<int64_t>{24, 8}));
  };
  torch::manual_seed(0);
  const at::Tensor untouched = torch::rand({4});

  torch::manual_seed(0);
  {
    fx::nn::SkipInit skip;
    EXPECT_TRUE(fx::nn::init_skipped());
    {
      fx::nn::SkipInit nested;
      construct_all();
    }
    EXPECT_TRUE(fx::nn::init_skipped());
    construct_all();
  }
  EXPECT_FALSE(fx::nn::init_skipped());
  EXPECT_TRUE(torch::equal(torch::rand({4}), untouched));

  torch::manual_seed(0);
  construct_all();
  EXPECT_FALSE(torch::equal(torch::rand({4}), untouched));  // without the guard, they draw
}
