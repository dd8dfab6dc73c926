// torchvision/models/vision_transformer.py, line for line.
#include <fx/models/vision_transformer.h>

#include <fx/node.h>

#include <torch/nn/init.h>

#include <cmath>

#include "layers.h"

namespace fx::models {

using detail::make;

namespace {
// Python's str(v) inside the f-string messages of torch._assert: a proxy
// prints as `Proxy(<node>)` (what torch.fx records), a size as torch.Size.
std::string py_str(const Value& v) {
  if (v.is_proxy()) return "Proxy(" + v.node()->name() + ")";
  c10::IValue iv = v.ivalue();
  if (iv.isInt()) return std::to_string(iv.toInt());
  if (iv.isIntList()) {
    std::string out = "torch.Size([";
    auto sizes = iv.toIntVector();
    for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
    return out + "])";
  }
  return iv.tagKind();
}

// EncoderBlock and Encoder both begin with this check.
void assert_3d(const Value& input) {
  Value cond = input.dim() == 3;
  fx::call("torch._assert", cond,
           "Expected (batch_size, seq_length, hidden_dim) got " + py_str(input.shape()));
}
}  // namespace

std::shared_ptr<detail::NamedSequential> mlp_block(int64_t in_dim, int64_t mlp_dim, double dropout) {
  auto mlp = make<detail::NamedSequential>("MLPBlock");
  auto fc1 = make<nn::Linear>(in_dim, mlp_dim), fc2 = make<nn::Linear>(mlp_dim, in_dim);
  mlp->add("0", fc1);
  mlp->add("1", make<nn::GELU>());
  mlp->add("2", make<nn::Dropout>(dropout));
  mlp->add("3", fc2);
  mlp->add("4", make<nn::Dropout>(dropout));
  torch::NoGradGuard no_grad;
  for (auto& fc : {fc1, fc2}) {
    torch::nn::init::xavier_uniform_(fc->weight);
    fc->bias.normal_(0, 1e-6);
  }
  return mlp;
}

EncoderBlock::EncoderBlock(int64_t num_heads_, int64_t hidden_dim, int64_t mlp_dim, double dropout_,
                           double attention_dropout)
    : Module("EncoderBlock", {"input"}), num_heads(num_heads_) {
  annotate("input", "torch.Tensor");  // forward(self, input: torch.Tensor)
  ln_1 = register_module("ln_1", make<nn::LayerNorm>(std::vector<int64_t>{hidden_dim}, 1e-6));
  self_attention =
      register_module("self_attention",
                      make<nn::MultiheadAttention>(hidden_dim, num_heads, attention_dropout, true, false,
                                                   false, std::nullopt, std::nullopt, /*batch_first=*/true));
  dropout = register_module("dropout", make<nn::Dropout>(dropout_));
  ln_2 = register_module("ln_2", make<nn::LayerNorm>(std::vector<int64_t>{hidden_dim}, 1e-6));
  mlp = register_module("mlp", mlp_block(hidden_dim, mlp_dim, dropout_));
}

Value EncoderBlock::forward(const std::vector<Value>& args) {
  const Value& input = args[0];
  assert_3d(input);
  Value x = (*ln_1)(input);
  // x, _ = self.self_attention(x, x, x, need_weights=False)
  x = (*self_attention)(x, x, x, kw("need_weights", false)).unpack(2)[0];
  x = (*dropout)(x);
  x = x + input;
  Value y = (*ln_2)(x);
  y = (*mlp)(y);
  return x + y;
}

Encoder::Encoder(int64_t seq_length, int64_t num_layers, int64_t num_heads, int64_t hidden_dim,
                 int64_t mlp_dim, double dropout_, double attention_dropout)
    : Module("Encoder", {"input"}) {
  annotate("input", "torch.Tensor");  // forward(self, input: torch.Tensor)
  pos_embedding =
      register_parameter("pos_embedding", torch::empty({1, seq_length, hidden_dim}).normal_(0, 0.02));
  dropout = register_module("dropout", make<nn::Dropout>(dropout_));
  layers = register_module("layers", make<detail::NamedSequential>());
  for (int64_t i = 0; i < num_layers; ++i)
    layers->add("encoder_layer_" + std::to_string(i),
                make<EncoderBlock>(num_heads, hidden_dim, mlp_dim, dropout_, attention_dropout));
  ln = register_module("ln", make<nn::LayerNorm>(std::vector<int64_t>{hidden_dim}, 1e-6));
}

Value Encoder::forward(const std::vector<Value>& args) {
  Value input = args[0];
  assert_3d(input);
  input = input + pos_embedding;
  return (*ln)((*layers)((*dropout)(input)));
}

VisionTransformer::VisionTransformer(int64_t image_size_, int64_t patch_size_, int64_t num_layers,
                                     int64_t num_heads, int64_t hidden_dim_, int64_t mlp_dim_, double dropout,
                                     double attention_dropout, int64_t num_classes_)
    : Module("VisionTransformer", {"x"}),
      image_size(image_size_),
      patch_size(patch_size_),
      hidden_dim(hidden_dim_),
      mlp_dim(mlp_dim_),
      num_classes(num_classes_) {
  annotate("x", "torch.Tensor");  // forward(self, x: torch.Tensor)
  if (patch_size <= 0 || image_size % patch_size != 0)
    throw Error("VisionTransformer: Input shape indivisible by patch size! (image_size " +
                std::to_string(image_size) + ", patch_size " + std::to_string(patch_size) + ")");
  conv_proj = register_module("conv_proj", detail::conv2d(3, hidden_dim, patch_size, patch_size));
  seq_length = (image_size / patch_size) * (image_size / patch_size);
  class_token = register_parameter("class_token", torch::zeros({1, 1, hidden_dim}));
  seq_length += 1;
  encoder = register_module("encoder", make<Encoder>(seq_length, num_layers, num_heads, hidden_dim, mlp_dim,
                                                     dropout, attention_dropout));
  auto head = make<nn::Linear>(hidden_dim, num_classes);
  heads = register_module("heads", make<detail::NamedSequential>());
  heads->add("head", head);

  torch::NoGradGuard no_grad;
  // trunc_normal_(std=sqrt(1 / fan_in)) truncates at +-2, far beyond these tiny stds: a normal.
  const int64_t fan_in = 3 * patch_size * patch_size;
  conv_proj->weight.normal_(0, std::sqrt(1.0 / static_cast<double>(fan_in)));
  conv_proj->bias.zero_();
  head->weight.zero_();
  head->bias.zero_();
}

Value VisionTransformer::process_input(const Value& x_) {
  std::vector<Value> nchw = x_.shape().unpack(4);  // n, c, h, w = x.shape
  const Value &n = nchw[0], &h = nchw[2], &w = nchw[3];
  const int64_t p = patch_size;
  const std::string size = std::to_string(image_size);
  fx::call("torch._assert", h == image_size,
           "Wrong image height! Expected " + size + " but got " + py_str(h) + "!");
  fx::call("torch._assert", w == image_size,
           "Wrong image width! Expected " + size + " but got " + py_str(w) + "!");
  Value n_h = fx::floordiv(h, p);
  Value n_w = fx::floordiv(w, p);
  Value x = (*conv_proj)(x_);
  x = x.reshape(n, hidden_dim, n_h * n_w);
  x = x.permute(0, 2, 1);
  return x;
}

Value VisionTransformer::forward(const std::vector<Value>& args) {
  Value x = process_input(args[0]);
  Value n = x.shape()[0];
  Value batch_class_token = Value(class_token).expand(n, -1, -1);
  x = fx::call("torch.cat", Value::list({batch_class_token, x}), kw("dim", 1));
  x = (*encoder)(x);
  x = x[Value::tuple({Value::slice(fx::None, fx::None), 0})];
  x = (*heads)(x);
  return x;
}

}  // namespace fx::models
