#pragma once
// torchvision.models.vision_transformer (0.29) in C++: MLPBlock,
// EncoderBlock, Encoder and VisionTransformer (the class behind vit_b_16 and
// the others, with any size: vit_b_16 is VisionTransformer(224, 16, 12, 12,
// 768, 3072)). Not ported: representation_size and conv_stem_configs.

#include <fx/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fx::models {

namespace detail {
class NamedSequential;
}

// MLPBlock(in_dim, mlp_dim, dropout): an MLP (nn.Sequential) of Linear ("0"),
// GELU ("1"), Dropout ("2"), Linear ("3"), Dropout ("4").
std::shared_ptr<detail::NamedSequential> mlp_block(int64_t in_dim, int64_t mlp_dim, double dropout);

class EncoderBlock : public Module {
 public:
  EncoderBlock(int64_t num_heads, int64_t hidden_dim, int64_t mlp_dim, double dropout,
               double attention_dropout);
  Value forward(const std::vector<Value>& args) override;

  int64_t num_heads;
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<nn::MultiheadAttention> self_attention;
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<detail::NamedSequential> mlp;
};

class Encoder : public Module {
 public:
  Encoder(int64_t seq_length, int64_t num_layers, int64_t num_heads, int64_t hidden_dim, int64_t mlp_dim,
          double dropout, double attention_dropout);
  Value forward(const std::vector<Value>& args) override;

  at::Tensor pos_embedding;
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<detail::NamedSequential> layers;  // encoder_layer_0, encoder_layer_1, ...
  std::shared_ptr<nn::LayerNorm> ln;
};

class VisionTransformer : public Module {
 public:
  VisionTransformer(int64_t image_size, int64_t patch_size, int64_t num_layers, int64_t num_heads,
                    int64_t hidden_dim, int64_t mlp_dim, double dropout = 0.0, double attention_dropout = 0.0,
                    int64_t num_classes = 1000);
  Value forward(const std::vector<Value>& args) override;
  Value process_input(const Value& x);

  int64_t image_size, patch_size, hidden_dim, mlp_dim, num_classes, seq_length;
  at::Tensor class_token;
  std::shared_ptr<nn::Conv2d> conv_proj;
  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<detail::NamedSequential> heads;  // head
};

}  // namespace fx::models
