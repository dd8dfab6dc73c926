// Realistic models (translations.py) translated line for line into
// fx::Module code, as a torch.nn user writes C++: no keywords spelled out
// for torch.fx's sake, no workarounds. Each must trace to torch.fx 2.14's
// graph, code and str(gm), and, with the Python model's weights, give its
// outputs.
#include "models.h"

#include <fx/state_dict.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace {

using fx::kw;
using fx::Value;
using fxcpp_test::expected;
using fxcpp_test::make;
using Modules = std::vector<std::shared_ptr<fx::Module>>;
const std::string F = "torch.nn.functional.";

std::shared_ptr<fx::nn::Conv2d> conv2d(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t padding = 0,
                                       int64_t groups = 1) {
  return make<fx::nn::Conv2d>(in, out, std::vector<int64_t>{k}, std::vector<int64_t>{stride},
                              std::vector<int64_t>{padding}, std::vector<int64_t>{1}, groups);
}

struct UNet : fx::Module {
  std::shared_ptr<fx::nn::Sequential> enc1, enc2, dec1;
  std::shared_ptr<fx::nn::Conv2d> head;
  UNet() : fx::Module("UNet") {
    enc1 = register_module("enc1", make<fx::nn::Sequential>(Modules{conv2d(3, 8, 3, 1, 1), make<fx::nn::ReLU>()}));
    enc2 = register_module("enc2", make<fx::nn::Sequential>(Modules{conv2d(8, 16, 3, 1, 1), make<fx::nn::ReLU>()}));
    dec1 = register_module("dec1", make<fx::nn::Sequential>(Modules{conv2d(24, 8, 3, 1, 1), make<fx::nn::ReLU>()}));
    head = register_module("head", conv2d(8, 2, 1));
  }
  Value forward(const std::vector<Value>& in) override {
    Value e1 = (*enc1)(in[0]);
    Value e2 = (*enc2)(fx::call(F + "max_pool2d", e1, 2));
    Value up = fx::call(F + "interpolate", e2, kw("scale_factor", 2), kw("mode", "bilinear"),
                        kw("align_corners", false));
    Value d1 = (*dec1)(fx::call("torch.cat", Value::list({up, e1}), kw("dim", 1)));
    return (*head)(d1);
  }
};

struct GPTBlock : fx::Module {
  int64_t n_head;
  double scale;
  std::shared_ptr<fx::nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<fx::nn::Linear> c_attn, c_proj, c_fc, mlp_proj;
  std::shared_ptr<fx::nn::GELU> gelu;
  at::Tensor bias;
  explicit GPTBlock(int64_t n_embd = 16, int64_t n_head = 2, int64_t block_size = 8)
      : fx::Module("GPTBlock"), n_head(n_head), scale(std::pow(static_cast<double>(n_embd / n_head), -0.5)) {
    ln_1 = register_module("ln_1", make<fx::nn::LayerNorm>(std::vector<int64_t>{n_embd}));
    c_attn = register_module("c_attn", make<fx::nn::Linear>(n_embd, 3 * n_embd));
    c_proj = register_module("c_proj", make<fx::nn::Linear>(n_embd, n_embd));
    ln_2 = register_module("ln_2", make<fx::nn::LayerNorm>(std::vector<int64_t>{n_embd}));
    c_fc = register_module("c_fc", make<fx::nn::Linear>(n_embd, 4 * n_embd));
    gelu = register_module("gelu", make<fx::nn::GELU>());
    mlp_proj = register_module("mlp_proj", make<fx::nn::Linear>(4 * n_embd, n_embd));
    bias = register_buffer("bias", torch::tril(torch::ones({block_size, block_size})).view({1, 1, block_size, block_size}));
  }
  Value attn(const Value& x) {
    auto BTC = x.size().unpack(3);
    const Value &B = BTC[0], &T = BTC[1], &C = BTC[2];
    auto qkv = (*c_attn)(x).split(C, kw("dim", 2)).unpack(3);
    Value k = qkv[1].view(B, T, n_head, fx::floordiv(C, n_head)).transpose(1, 2);
    Value q = qkv[0].view(B, T, n_head, fx::floordiv(C, n_head)).transpose(1, 2);
    Value v = qkv[2].view(B, T, n_head, fx::floordiv(C, n_head)).transpose(1, 2);
    Value att = fx::matmul_op(q, k.transpose(-2, -1)) * scale;
    const Value all = Value::slice(fx::None, fx::None), upto_T = Value::slice(fx::None, T);
    att = att.masked_fill(Value(bias)[Value::tuple({all, all, upto_T, upto_T})] == 0,
                          -std::numeric_limits<double>::infinity());
    att = fx::call(F + "softmax", att, kw("dim", -1));
    Value y = fx::matmul_op(att, v);
    y = y.transpose(1, 2).contiguous().view(B, T, C);
    return (*c_proj)(y);
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0] + attn((*ln_1)(in[0]));
    return x + (*mlp_proj)((*gelu)((*c_fc)((*ln_2)(x))));
  }
};

struct CLIPHead : fx::Module {
  std::shared_ptr<fx::nn::Linear> visual_projection, text_projection;
  at::Tensor logit_scale;
  CLIPHead() : fx::Module("CLIPHead", {"image_embeds", "text_embeds"}) {
    visual_projection = register_module("visual_projection", make<fx::nn::Linear>(8, 6, false));
    text_projection = register_module("text_projection", make<fx::nn::Linear>(10, 6, false));
    logit_scale = register_parameter("logit_scale", torch::tensor(2.6592));
  }
  Value forward(const std::vector<Value>& in) override {
    Value image_embeds = (*visual_projection)(in[0]);
    Value text_embeds = (*text_projection)(in[1]);
    image_embeds = image_embeds / image_embeds.norm(kw("p", 2), kw("dim", -1), kw("keepdim", true));
    text_embeds = text_embeds / text_embeds.norm(kw("p", 2), kw("dim", -1), kw("keepdim", true));
    Value scale = Value(logit_scale).exp();
    Value logits_per_text = fx::call("torch.matmul", text_embeds, image_embeds.t()) * scale;
    return Value::tuple({logits_per_text, logits_per_text.t()});
  }
};

struct RNNTextEncoder : fx::Module {
  std::shared_ptr<fx::nn::Embedding> embedding;
  std::shared_ptr<fx::nn::GRU> rnn;
  std::shared_ptr<fx::nn::Linear> fc;
  RNNTextEncoder() : fx::Module("RNNTextEncoder", {"tokens"}) {
    embedding = register_module("embedding", make<fx::nn::Embedding>(20, 8, 0));
    rnn = register_module("rnn", make<fx::nn::GRU>(8, 12, 1, true, /*batch_first=*/true, 0.0, /*bidirectional=*/true));
    fc = register_module("fc", make<fx::nn::Linear>(24, 5));
  }
  Value forward(const std::vector<Value>& in) override {
    Value emb = (*embedding)(in[0]);
    auto out_h = (*rnn)(emb).unpack(2);
    Value pooled = fx::call("torch.cat", Value::list({out_h[1][-2], out_h[1][-1]}), kw("dim", 1));
    return Value::tuple({(*fc)(pooled), out_h[0].mean(kw("dim", 1))});
  }
};

struct MoERouter : fx::Module {
  std::shared_ptr<fx::nn::Linear> gate;
  std::shared_ptr<fx::nn::ModuleDict> experts;
  MoERouter() : fx::Module("MoERouter") {
    gate = register_module("gate", make<fx::nn::Linear>(8, 3));
    experts = register_module(
        "experts", make<fx::nn::ModuleDict>(std::vector<std::pair<std::string, std::shared_ptr<fx::Module>>>{
                       {"a", make<fx::nn::Linear>(8, 8)},
                       {"b", make<fx::nn::Sequential>(Modules{make<fx::nn::Linear>(8, 8), make<fx::nn::GELU>()})},
                       {"c", make<fx::nn::Identity>()}}));
  }
  Value forward(const std::vector<Value>& in) override {
    const Value& x = in[0];
    Value weights = fx::call(F + "softmax", (*gate)(x), kw("dim", -1));
    auto top_idx = fx::call("torch.topk", weights, 2, kw("dim", -1)).unpack(2);
    Value out = 0;
    int64_t i = 0;
    for (const std::string& name : experts->keys()) {
      // C++ leaves the order of `*`'s operands open; Python reads left to right.
      Value weight = weights[Value::tuple({fx::Ellipsis, Value::slice(i, i + 1)})];
      out = out + weight * (*experts)[name](x);
      ++i;
    }
    return Value::tuple({out, top_idx[0], top_idx[1]});
  }
};

struct SqueezeExcite : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> fc1, fc2;
  SqueezeExcite() : fx::Module("SqueezeExcite") {
    fc1 = register_module("fc1", conv2d(8, 2, 1));
    fc2 = register_module("fc2", conv2d(2, 8, 1));
  }
  Value forward(const std::vector<Value>& in) override {
    Value s = fx::call(F + "adaptive_avg_pool2d", in[0], 1);
    s = fx::call(F + "relu", (*fc1)(s), kw("inplace", true));
    return in[0] * fx::call("torch.sigmoid", (*fc2)(s));
  }
};

struct PatchEmbed : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> proj;
  std::shared_ptr<fx::nn::LayerNorm> norm;
  at::Tensor cls_token, pos_embed;
  PatchEmbed() : fx::Module("PatchEmbed") {
    proj = register_module("proj", conv2d(3, 16, 4, 4));
    cls_token = register_parameter("cls_token", torch::zeros({1, 1, 16}));
    pos_embed = register_parameter("pos_embed", torch::randn({1, 5, 16}) * .02);
    norm = register_module("norm", make<fx::nn::LayerNorm>(std::vector<int64_t>{16}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = (*proj)(in[0]).flatten(2).transpose(1, 2);
    Value B = x.shape()[0];
    Value cls = Value(cls_token).expand(B, -1, -1);
    x = fx::call("torch.cat", Value::tuple({cls, x}), kw("dim", 1)) + pos_embed;
    return (*norm)(x);
  }
};

struct VAEHead : fx::Module {
  std::shared_ptr<fx::nn::Linear> fc;
  VAEHead() : fx::Module("VAEHead", {"x", "eps"}) { fc = register_module("fc", make<fx::nn::Linear>(10, 8)); }
  Value forward(const std::vector<Value>& in) override {
    auto mu_logvar = (*fc)(in[0]).chunk(2, kw("dim", -1)).unpack(2);
    const Value &mu = mu_logvar[0], &logvar = mu_logvar[1];
    Value std = fx::call("torch.exp", 0.5 * logvar);
    return Value::tuple({mu + in[1] * std, mu, logvar});
  }
};

struct CausalConv : fx::Module {
  std::shared_ptr<fx::nn::Conv1d> conv;
  int64_t pad = (3 - 1) * 2;
  CausalConv() : fx::Module("CausalConv") {
    conv = register_module("conv", make<fx::nn::Conv1d>(4, 6, std::vector<int64_t>{3}, std::vector<int64_t>{1},
                                                        std::vector<int64_t>{0}, std::vector<int64_t>{2}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value y = (*conv)(fx::call(F + "pad", in[0], Value::tuple({pad, 0})));
    return fx::call(F + "gelu", y) + y;
  }
};

struct ConvNeXtBlock : fx::Module {
  std::shared_ptr<fx::nn::Conv2d> dwconv;
  std::shared_ptr<fx::nn::LayerNorm> norm;
  std::shared_ptr<fx::nn::Linear> pwconv1, pwconv2;
  std::shared_ptr<fx::nn::GELU> act;
  at::Tensor gamma;
  explicit ConvNeXtBlock(int64_t dim = 8) : fx::Module("ConvNeXtBlock") {
    dwconv = register_module("dwconv", conv2d(dim, dim, 7, 1, 3, dim));
    norm = register_module("norm", make<fx::nn::LayerNorm>(std::vector<int64_t>{dim}, 1e-6));
    pwconv1 = register_module("pwconv1", make<fx::nn::Linear>(dim, 4 * dim));
    act = register_module("act", make<fx::nn::GELU>());
    pwconv2 = register_module("pwconv2", make<fx::nn::Linear>(4 * dim, dim));
    gamma = register_parameter("gamma", 1e-6 * torch::ones({dim}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value shortcut = in[0];
    Value x = (*dwconv)(in[0]);
    x = x.permute(0, 2, 3, 1);
    x = (*norm)(x);
    x = (*pwconv2)((*act)((*pwconv1)(x)));
    x = Value(gamma) * x;
    x = x.permute(0, 3, 1, 2);
    return shortcut + x;
  }
};

struct LSTMCellByHand : fx::Module {
  std::shared_ptr<fx::nn::Linear> ih, hh;
  LSTMCellByHand() : fx::Module("LSTMCellByHand", {"x", "h", "c"}) {
    ih = register_module("ih", make<fx::nn::Linear>(6, 32));
    hh = register_module("hh", make<fx::nn::Linear>(8, 32));
  }
  Value forward(const std::vector<Value>& in) override {
    // The left operands are named first: C++ leaves the order of `a * b`'s
    // operands open, Python reads left to right (docs/tracing.md).
    Value x = (*ih)(in[0]);
    Value gates = x + (*hh)(in[1]);
    auto ifgo = gates.chunk(4, kw("dim", 1)).unpack(4);
    Value kept = fx::call(F + "sigmoid", ifgo[1]) * in[2];
    Value input_gate = fx::call(F + "sigmoid", ifgo[0]);
    Value c = kept + input_gate * fx::call(F + "tanh", ifgo[2]);
    Value output_gate = fx::call(F + "sigmoid", ifgo[3]);
    Value h = output_gate * fx::call(F + "tanh", c);
    return Value::tuple({h, c});
  }
};

// The tensors of a structured value, in torch.utils._pytree's order.
void tensor_leaves(const Value& v, std::vector<at::Tensor>& out) {
  if (v.is_tuple() || v.is_list() || v.is_dict()) {
    for (const Value& item : v.items()) tensor_leaves(item, out);
    return;
  }
  c10::IValue iv = v.ivalue();
  if (iv.isTensor()) out.push_back(iv.toTensor());
}

template <class M>
void expect_translation(const std::string& name) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  const auto& e = expected().at("translations").at(name);
  M model;
  const std::string dir = std::filesystem::path(FXCPP_TRACE_EXPECTED).parent_path().string() + "/";
  fx::load_state_dict(model, dir + name + ".state.pt");  // strict: the same parameters and buffers
  auto gm = fx::symbolic_trace(model);
  EXPECT_EQ(gm->graph().to_string(), e.at("graph").get<std::string>());
  EXPECT_EQ(gm->code(), e.at("code").get<std::string>());
  EXPECT_EQ(gm->to_string(), e.at("str").get<std::string>());

  std::vector<Value> inputs;
  for (const auto& t : fx::read_tensors(dir + name + ".in.pt")) inputs.emplace_back(t);
  const auto want = fx::read_tensors(dir + name + ".out.pt");
  torch::NoGradGuard no_grad;
  for (const Value& out : {gm->forward(inputs), model.forward(inputs)}) {
    std::vector<at::Tensor> got;
    tensor_leaves(out, got);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-5)) << name << " output " << i;
  }
}

TEST(Translation, UNet) { expect_translation<UNet>("unet"); }
TEST(Translation, GPTBlock) { expect_translation<GPTBlock>("gpt_block"); }
TEST(Translation, CLIPHead) { expect_translation<CLIPHead>("clip_head"); }
TEST(Translation, RNNTextEncoder) { expect_translation<RNNTextEncoder>("rnn_text_encoder"); }
TEST(Translation, MoERouter) { expect_translation<MoERouter>("moe_router"); }
TEST(Translation, SqueezeExcite) { expect_translation<SqueezeExcite>("squeeze_excite"); }
TEST(Translation, PatchEmbed) { expect_translation<PatchEmbed>("patch_embed"); }
TEST(Translation, VAEHead) { expect_translation<VAEHead>("vae_head"); }
TEST(Translation, CausalConv) { expect_translation<CausalConv>("causal_conv"); }
TEST(Translation, ConvNeXtBlock) { expect_translation<ConvNeXtBlock>("convnext_block"); }
TEST(Translation, LSTMCellByHand) { expect_translation<LSTMCellByHand>("lstm_cell_by_hand"); }

}  // namespace
