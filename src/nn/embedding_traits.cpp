// The records of embedding.h's classes (torch/nn/modules/sparse.py; PyTorch's
// _weight argument aside).
#include <fx/nn/embedding.h>

#include "builtin_traits.h"

namespace fx::nn {

using detail::py_bool;
using detail::py_float;
using detail::py_optional;

std::vector<ModuleTraits> embedding_traits() {
  std::vector<ModuleTraits> out;
  out.push_back(TraitsOf<Embedding>{
      .type = "torch.nn.Embedding",
      .torch_typename = torch_modules("sparse", "Embedding"),
      .params = {"num_embeddings",
                 "embedding_dim",
                 {"padding_idx", None},
                 {"max_norm", None},
                 {"norm_type", 2.0},
                 {"scale_grad_by_freq", false},
                 {"sparse", false}},
      .describe =
          [](const Embedding& m) {
            return Args{m.num_embeddings,
                        m.embedding_dim,
                        spec_optional(m.padding_idx),
                        spec_optional(m.max_norm),
                        m.norm_type,
                        m.scale_grad_by_freq,
                        m.sparse};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<Embedding>(a.integer("num_embeddings"), a.integer("embedding_dim"),
                                               a.optional_integer("padding_idx"), a.optional_real("max_norm"),
                                               a.real("norm_type"), a.boolean("scale_grad_by_freq"),
                                               a.boolean("sparse"));
          },
      .constants =
          [](const Embedding& m) {
            return ModuleConstants{{"num_embeddings", py_int(m.num_embeddings)},
                                   {"embedding_dim", py_int(m.embedding_dim)},
                                   {"padding_idx", py_optional(m.padding_idx)},
                                   {"max_norm", py_optional(m.max_norm)},
                                   {"norm_type", py_float(m.norm_type)},
                                   {"scale_grad_by_freq", py_bool(m.scale_grad_by_freq)},
                                   {"sparse", py_bool(m.sparse)}};
          },
      .emit_cpp =
          [](CppModuleCall& w, const Embedding& m) {
            if (m.max_norm) w.fail("is an Embedding with max_norm (it renormalizes its weight in place)");
            std::string x = w.input();
            return cpp_tensor("at::embedding(" + w.weight("weight") + ", " + x + ", " +
                              std::to_string(m.padding_idx.value_or(-1)) + ", " +
                              CppModuleCall::boolean(m.scale_grad_by_freq) + ", " +
                              CppModuleCall::boolean(m.sparse) + ")");
          }});
  out.push_back(TraitsOf<EmbeddingBag>{
      .type = "torch.nn.EmbeddingBag",
      .torch_typename = torch_modules("sparse", "EmbeddingBag"),
      .params = {"num_embeddings",
                 "embedding_dim",
                 {"max_norm", None},
                 {"norm_type", 2.0},
                 {"scale_grad_by_freq", false},
                 {"mode", "mean"},
                 {"sparse", false},
                 {"include_last_offset", false},
                 {"padding_idx", None}},
      .describe =
          [](const EmbeddingBag& m) {
            return Args{m.num_embeddings, m.embedding_dim,       spec_optional(m.max_norm),
                        m.norm_type,      m.scale_grad_by_freq,  m.mode,
                        m.sparse,         m.include_last_offset, spec_optional(m.padding_idx)};
          },
      .make =
          [](const SpecArgs& a) {
            return std::make_shared<EmbeddingBag>(
                a.integer("num_embeddings"), a.integer("embedding_dim"), a.optional_real("max_norm"),
                a.real("norm_type"), a.boolean("scale_grad_by_freq"), a.str("mode"), a.boolean("sparse"),
                a.boolean("include_last_offset"), a.optional_integer("padding_idx"));
          },
      .constants =
          [](const EmbeddingBag& m) {
            return ModuleConstants{{"num_embeddings", py_int(m.num_embeddings)},
                                   {"embedding_dim", py_int(m.embedding_dim)},
                                   {"max_norm", py_optional(m.max_norm)},
                                   {"norm_type", py_float(m.norm_type)},
                                   {"scale_grad_by_freq", py_bool(m.scale_grad_by_freq)},
                                   {"mode", m.mode},
                                   {"sparse", py_bool(m.sparse)},
                                   {"include_last_offset", py_bool(m.include_last_offset)},
                                   {"padding_idx", py_optional(m.padding_idx)}};
          }});
  return out;
}

}  // namespace fx::nn
