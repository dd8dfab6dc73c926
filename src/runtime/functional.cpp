// torch.nn.functional.* adapters: only where the Python signature differs from
// the ATen schema (an `inplace` flag choosing op vs op_, argument order,
// None meaning "like kernel_size", legacy reduction flags, Python-side
// computation). Everything else in F resolves to aten::<name> directly.

#include "internal.h"

#include <array>
#include <cmath>
#include <limits>
#include <optional>

namespace fx::runtime {

namespace {

// constexpr: the registry may be built during static initialization (fx::wrap at
// namespace scope), before dynamically initialized globals of this file.
constexpr std::string_view kF = "torch.nn.functional.";

struct Reg {
  using Body = std::function<c10::IValue(const std::string&, std::vector<c10::IValue>&)>;
  Adapters& ad;
  // F.<name>, bound by torch's signature of it (python_params: a Python
  // function's from the generated table, a builtin's from its ATen schema);
  // `body` gets the arguments bound, defaults filled in.
  void operator()(const std::string& name, Body body) const {
    const std::string fn = std::string(kF) + name;
    ad.function(fn, [fn, params = python_params(fn), body = std::move(body)](std::vector<c10::IValue>& args,
                                                                             IValueKwargs& kwargs) {
      auto a = runtime::bind(fn, params, args, kwargs);
      return body(fn, a);
    });
  }
};

// F.<name>(input, <scalars...>, inplace=False) -> aten::<name>(input, scalars) or aten::<name>_.
void inplace_unary(const Reg& reg, const std::string& name) {
  reg(name, [aten = name](const std::string& fn, std::vector<c10::IValue>& a) {
    const bool inplace = to_bool(fn, a.back());
    a.pop_back();
    return call_aten(inplace ? aten + "_" : aten, std::move(a));
  });
}

int64_t reduction_enum(const std::string& fn, const c10::IValue& size_average, const c10::IValue& reduce,
                       const c10::IValue& reduction) {
  std::string r;
  if (!size_average.isNone() || !reduce.isNone()) {  // torch.nn._reduction.legacy_get_string
    const bool sa = size_average.isNone() ? true : truth(fn, size_average);
    const bool rd = reduce.isNone() ? true : truth(fn, reduce);
    r = !rd ? "none" : sa ? "mean" : "sum";
  } else {
    r = to_str(fn, reduction);
  }
  if (r == "none") return at::Reduction::None;
  if (r == "mean") return at::Reduction::Mean;
  if (r == "sum") return at::Reduction::Sum;
  throw Error(fn + ": ValueError: " + r + " is not a valid value for reduction");
}

int64_t softmax_dim(const std::string& fn, const c10::IValue& dim, int64_t ndim) {
  if (!dim.isNone()) return to_int(fn, dim);
  return (ndim == 0 || ndim == 1 || ndim == 3) ? 0 : 1;  // F._get_softmax_dim
}

// F.adaptive_*_pool: None in output_size keeps the input's size.
std::vector<int64_t> adaptive_size(const std::string& fn, const at::Tensor& input, const c10::IValue& v,
                                   size_t n) {
  std::vector<int64_t> out;
  if (v.isInt()) return std::vector<int64_t>(n, v.toInt());
  auto items = sequence_items(v);
  if (!is_sequence(v)) type_error(fn, "output_size must be an int or a sequence, got " + python_type_name(v));
  if (items.size() != n) type_error(fn, "output_size must have " + std::to_string(n) + " elements");
  for (size_t i = 0; i < n; ++i)
    out.push_back(items[i].isNone()
                      ? input.size(input.dim() - static_cast<int64_t>(n) + static_cast<int64_t>(i))
                      : to_int(fn, items[i]));
  return out;
}

c10::IValue pair(std::tuple<at::Tensor, at::Tensor> t) {
  return c10::ivalue::Tuple::create({std::get<0>(t), std::get<1>(t)});
}

// F._canonical_mask: a bool mask becomes a float one of `target`'s dtype,
// -inf where it is true; a float mask is kept. `other` is the dtype of the
// mask it will be merged with, when it is checked.
std::optional<at::Tensor> canonical_mask(const std::string& fn, std::optional<at::Tensor> mask,
                                         const std::string& name, std::optional<at::ScalarType> other,
                                         const std::string& other_name, at::ScalarType target) {
  if (!mask) return mask;
  const bool is_float = at::isFloatingType(mask->scalar_type());
  if (mask->scalar_type() != at::kBool && !is_float)
    throw Error(fn + ": AssertionError: only bool and floating types of " + name + " are supported");
  if (other && mask->scalar_type() != *other) {
    TORCH_WARN_ONCE("Support for mismatched ", name, " and ", other_name,
                    " is deprecated. Use same type for both instead.");
  }
  if (!is_float)
    return at::zeros_like(*mask, at::TensorOptions().dtype(target))
        .masked_fill_(*mask, -std::numeric_limits<double>::infinity());
  return mask;
}

std::optional<at::ScalarType> none_or_dtype(const std::optional<at::Tensor>& t) {
  return t ? std::optional<at::ScalarType>(t->scalar_type()) : std::nullopt;
}

std::string shape_str(const at::Tensor& t) { return "torch.Size(" + c10::str(t.sizes()) + ")"; }

// _in_projection_packed: one matrix product where query, key and value are
// the same tensor (self-attention), two where key and value are, and the
// weight's three parts are regrouped as (3, E) so that each is contiguous.
std::array<at::Tensor, 3> in_projection_packed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& w, const std::optional<at::Tensor>& b) {
  const int64_t E = q.size(-1);
  // unflatten(-1, (n, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
  auto regroup = [E](const at::Tensor& proj, int64_t n) {
    return proj.unflatten(-1, {n, E}).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous();
  };
  if (k.is_same(v)) {
    if (q.is_same(k)) {
      at::Tensor proj = regroup(at::linear(q, w, b), 3);
      return {proj[0], proj[1], proj[2]};
    }
    auto ws = w.split({E, E * 2});
    std::optional<at::Tensor> b_q, b_kv;
    if (b) {
      auto bs = b->split({E, E * 2});
      b_q = bs[0], b_kv = bs[1];
    }
    at::Tensor q_proj = at::linear(q, ws[0], b_q);
    at::Tensor kv_proj = regroup(at::linear(k, ws[1], b_kv), 2);
    return {q_proj, kv_proj[0], kv_proj[1]};
  }
  auto ws = w.chunk(3);
  std::array<std::optional<at::Tensor>, 3> bs;
  if (b) {
    auto c = b->chunk(3);
    bs = {c[0], c[1], c[2]};
  }
  return {at::linear(q, ws[0], bs[0]), at::linear(k, ws[1], bs[1]), at::linear(v, ws[2], bs[2])};
}

// F.multi_head_attention_forward as torch/nn/functional.py writes it in
// 2.14, step by step, so that a capture records make_fx's operators:
// LibTorch's C++ version differs (it adds bool masks instead of masking,
// refuses 3-D masks, and never calls scaled_dot_product_attention).
// Without need_weights the attention is one scaled_dot_product_attention;
// with it, the weights are computed by baddbmm, softmax and bmm.
c10::IValue multi_head_attention(const std::string& fn, std::vector<c10::IValue>& a) {
  at::Tensor query = to_tensor(fn, a[0]), key = to_tensor(fn, a[1]), value = to_tensor(fn, a[2]);
  const int64_t embed_dim_to_check = to_int(fn, a[3]), num_heads = to_int(fn, a[4]);
  auto in_proj_weight = to_opt_tensor(fn, a[5]), in_proj_bias = to_opt_tensor(fn, a[6]);
  auto bias_k = to_opt_tensor(fn, a[7]), bias_v = to_opt_tensor(fn, a[8]);
  const bool add_zero_attn = to_bool(fn, a[9]);
  double dropout_p = to_double(fn, a[10]);
  at::Tensor out_proj_weight = to_tensor(fn, a[11]);
  auto out_proj_bias = to_opt_tensor(fn, a[12]);
  const bool training = to_bool(fn, a[13]);
  auto key_padding_mask = to_opt_tensor(fn, a[14]);
  const bool need_weights = to_bool(fn, a[15]);
  auto attn_mask = to_opt_tensor(fn, a[16]);
  const bool separate = to_bool(fn, a[17]);
  auto q_w = to_opt_tensor(fn, a[18]), k_w = to_opt_tensor(fn, a[19]), v_w = to_opt_tensor(fn, a[20]);
  auto static_k = to_opt_tensor(fn, a[21]), static_v = to_opt_tensor(fn, a[22]);
  const bool average = to_bool(fn, a[23]);
  bool is_causal = to_bool(fn, a[24]);
  auto fail = [&](const std::string& what) -> Error { return Error(fn + ": " + what); };

  // _mha_shape_check
  const bool batched = query.dim() == 3;
  if (!batched && query.dim() != 2)
    throw fail("AssertionError: query should be unbatched 2D or batched 3D tensor but received " +
               std::to_string(query.dim()) + "-D query tensor");
  if (key.dim() != query.dim() || value.dim() != query.dim())
    throw fail("AssertionError: For " + std::string(batched ? "batched (3-D)" : "unbatched (2-D)") +
               " `query`, expected `key` and `value` to be " + (batched ? "3-D" : "2-D") + " but found " +
               std::to_string(key.dim()) + "-D and " + std::to_string(value.dim()) +
               "-D tensors respectively");
  if (key_padding_mask && key_padding_mask->dim() != (batched ? 2 : 1))
    throw fail("AssertionError: For " + std::string(batched ? "batched (3-D)" : "unbatched (2-D)") +
               " `query`, expected `key_padding_mask` to be `None` or " + (batched ? "2-D" : "1-D") +
               " but found " + std::to_string(key_padding_mask->dim()) + "-D tensor instead");
  if (attn_mask && attn_mask->dim() != 2 && attn_mask->dim() != 3)
    throw fail("AssertionError: For " + std::string(batched ? "batched (3-D)" : "unbatched (2-D)") +
               " `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found " +
               std::to_string(attn_mask->dim()) + "-D tensor instead");
  if (!batched) {
    query = query.unsqueeze(1), key = key.unsqueeze(1), value = value.unsqueeze(1);
    if (key_padding_mask) key_padding_mask = key_padding_mask->unsqueeze(0);
  }
  const int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2);
  const int64_t key_len = key.size(0);

  key_padding_mask = canonical_mask(fn, key_padding_mask, "key_padding_mask", none_or_dtype(attn_mask),
                                    "attn_mask", query.scalar_type());
  if (is_causal && !attn_mask)
    throw fail(
        "RuntimeError: Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
        "method `generate_square_subsequent_mask` to create this mask.");
  if (is_causal && !key_padding_mask && !need_weights) {
    // The hint alone tells scaled_dot_product_attention the mask is causal.
    attn_mask.reset();
  } else {
    attn_mask = canonical_mask(fn, attn_mask, "attn_mask", std::nullopt, "", query.scalar_type());
    if (key_padding_mask) is_causal = false;  // the merged mask is no longer causal
  }

  if (embed_dim != embed_dim_to_check)
    throw fail("AssertionError: was expecting embedding dimension of " + std::to_string(embed_dim_to_check) +
               ", but got " + std::to_string(embed_dim));
  if (num_heads <= 0 || embed_dim % num_heads != 0)
    throw fail("AssertionError: embed_dim " + std::to_string(embed_dim) + " not divisible by num_heads " +
               std::to_string(num_heads));
  const int64_t head_dim = embed_dim / num_heads;
  if (separate) {
    if (key.sizes().slice(0, 2) != value.sizes().slice(0, 2))
      throw fail("AssertionError: key's sequence and batch dims " + c10::str(key.sizes().slice(0, 2)) +
                 " do not match value's " + c10::str(value.sizes().slice(0, 2)));
  } else if (key.sizes() != value.sizes()) {
    throw fail("AssertionError: key shape " + shape_str(key) + " does not match value shape " +
               shape_str(value));
  }

  at::Tensor q, k, v;
  if (!separate) {
    if (!in_proj_weight)
      throw fail("AssertionError: use_separate_proj_weight is False but in_proj_weight is None");
    auto p = in_projection_packed(query, key, value, *in_proj_weight, in_proj_bias);
    q = p[0], k = p[1], v = p[2];
  } else {
    if (!q_w) throw fail("AssertionError: use_separate_proj_weight is True but q_proj_weight is None");
    if (!k_w) throw fail("AssertionError: use_separate_proj_weight is True but k_proj_weight is None");
    if (!v_w) throw fail("AssertionError: use_separate_proj_weight is True but v_proj_weight is None");
    std::array<std::optional<at::Tensor>, 3> b;
    if (in_proj_bias) {
      auto c = in_proj_bias->chunk(3);
      b = {c[0], c[1], c[2]};
    }
    // _in_projection
    q = at::linear(query, *q_w, b[0]), k = at::linear(key, *k_w, b[1]), v = at::linear(value, *v_w, b[2]);
  }

  if (attn_mask) {
    if (attn_mask->dim() == 2) {
      if (attn_mask->sizes() != at::IntArrayRef{tgt_len, key_len})
        throw fail("RuntimeError: The shape of the 2D attn_mask is " + shape_str(*attn_mask) +
                   ", but should be (" + std::to_string(tgt_len) + ", " + std::to_string(key_len) + ").");
      attn_mask = attn_mask->unsqueeze(0);
    } else if (attn_mask->sizes() != at::IntArrayRef{bsz * num_heads, tgt_len, key_len}) {
      throw fail("RuntimeError: The shape of the 3D attn_mask is " + shape_str(*attn_mask) +
                 ", but should be (" + std::to_string(bsz * num_heads) + ", " + std::to_string(tgt_len) +
                 ", " + std::to_string(key_len) + ").");
    }
  }
  if (bias_k && bias_v) {
    if (static_k) throw fail("AssertionError: bias cannot be added to static key.");
    if (static_v) throw fail("AssertionError: bias cannot be added to static value.");
    k = at::cat({k, bias_k->repeat({1, bsz, 1})});
    v = at::cat({v, bias_v->repeat({1, bsz, 1})});
    if (attn_mask) attn_mask = at::pad(*attn_mask, {0, 1});
    if (key_padding_mask) key_padding_mask = at::pad(*key_padding_mask, {0, 1});
  } else if (bias_k || bias_v) {
    throw fail(bias_k ? "AssertionError: bias_k is set but bias_v is None"
                      : "AssertionError: bias_v is set but bias_k is None");
  }

  q = q.view({tgt_len, bsz * num_heads, head_dim}).transpose(0, 1);
  auto heads = [&](const at::Tensor& t, const std::optional<at::Tensor>& fixed, const char* name) {
    if (!fixed) return t.view({t.size(0), bsz * num_heads, head_dim}).transpose(0, 1);
    // Python indexes the sizes and fails on another rank; say so instead.
    if (fixed->dim() != 3)
      throw fail(std::string("AssertionError: expecting ") + name + " of 3 dimensions (bsz * num_heads, " +
                 "source length, head_dim), but got " + std::to_string(fixed->dim()));
    if (fixed->size(0) != bsz * num_heads)
      throw fail(std::string("AssertionError: expecting ") + name + ".size(0) of " +
                 std::to_string(bsz * num_heads) + ", but got " + std::to_string(fixed->size(0)));
    if (fixed->size(2) != head_dim)
      throw fail(std::string("AssertionError: expecting ") + name + ".size(2) of " +
                 std::to_string(head_dim) + ", but got " + std::to_string(fixed->size(2)));
    return *fixed;
  };
  k = heads(k, static_k, "static_k");
  v = heads(v, static_v, "static_v");
  if (add_zero_attn) {
    k = at::cat({k, at::zeros({bsz * num_heads, 1, head_dim}, k.options())}, 1);
    v = at::cat({v, at::zeros({bsz * num_heads, 1, head_dim}, v.options())}, 1);
    if (attn_mask) attn_mask = at::pad(*attn_mask, {0, 1});
    if (key_padding_mask) key_padding_mask = at::pad(*key_padding_mask, {0, 1});
  }
  const int64_t src_len = k.size(1);
  if (key_padding_mask) {
    // _check_key_padding_mask
    if (key_padding_mask->size(0) != bsz)
      throw fail("AssertionError: Expected key_padded_mask.shape[0] to be " + std::to_string(bsz) +
                 ", but got " + std::to_string(key_padding_mask->size(0)));
    if (key_padding_mask->size(1) != src_len)
      throw fail("AssertionError: Expected key_padded_mask.shape[1] to be " + std::to_string(src_len) +
                 ", but got " + std::to_string(key_padding_mask->size(1)));
    at::Tensor kpm = key_padding_mask->view({bsz, 1, 1, src_len})
                         .expand({-1, num_heads, -1, -1})
                         .reshape({bsz * num_heads, 1, src_len});
    attn_mask = attn_mask ? *attn_mask + kpm : kpm;
  }
  if (!training) dropout_p = 0.0;

  if (need_weights) {
    at::Tensor q_scaled = q * std::sqrt(1.0 / static_cast<double>(q.size(-1)));
    if (is_causal && !attn_mask)
      throw fail("AssertionError: FIXME: is_causal not implemented for need_weights");
    at::Tensor weights = attn_mask ? at::baddbmm(*attn_mask, q_scaled, k.transpose(-2, -1))
                                   : at::bmm(q_scaled, k.transpose(-2, -1));
    weights = at::softmax(weights, -1);
    if (dropout_p > 0.0) weights = at::dropout(weights, dropout_p, true);
    at::Tensor out = at::bmm(weights, v);
    out = out.transpose(0, 1).reshape({tgt_len * bsz, embed_dim});
    out = at::linear(out, out_proj_weight, out_proj_bias);
    out = out.view({tgt_len, bsz, out.size(1)});
    weights = weights.view({bsz, num_heads, tgt_len, src_len});
    if (average) weights = weights.mean(1);
    if (!batched) out = out.squeeze(1), weights = weights.squeeze(0);
    return c10::ivalue::Tuple::create({out, weights});
  }
  // attn_mask is (L, S) or (N * num_heads, L, S); SDPA takes (N, num_heads, L, S).
  if (attn_mask) {
    if (attn_mask->size(0) == 1 && attn_mask->dim() == 3)
      attn_mask = attn_mask->unsqueeze(0);
    else
      attn_mask = attn_mask->view({bsz, num_heads, -1, src_len});
  }
  q = q.view({bsz, num_heads, tgt_len, head_dim});
  k = k.view({bsz, num_heads, src_len, head_dim});
  v = v.view({bsz, num_heads, src_len, head_dim});
  at::Tensor out = at::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
  out = out.permute({2, 0, 1, 3}).reshape({bsz * tgt_len, embed_dim});
  out = at::linear(out, out_proj_weight, out_proj_bias);
  out = out.view({tgt_len, bsz, out.size(1)});
  if (!batched) out = out.squeeze(1);
  return c10::ivalue::Tuple::create({out, c10::IValue()});
}

}  // namespace

void register_functional(Adapters& ad) {
  Reg reg{ad};

  // ---- activations with `inplace` -----------------------------------------
  for (const char* name : {"relu", "elu", "leaky_relu", "hardtanh", "silu", "hardswish", "hardsigmoid",
                           "mish", "selu", "celu", "threshold"})
    inplace_unary(reg, name);
  reg("relu6", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor x = to_tensor(fn, a[0]);
    return c10::IValue(to_bool(fn, a[1]) ? at::hardtanh_(x, 0, 6) : at::hardtanh(x, 0, 6));
  });
  reg("logsigmoid", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::log_sigmoid(to_tensor(fn, a[0])));
  });
  reg("softsign", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor x = to_tensor(fn, a[0]);
    return c10::IValue(x / (x.abs() + 1));
  });
  reg("tanhshrink", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor x = to_tensor(fn, a[0]);
    return c10::IValue(x - x.tanh());
  });
  reg("sigmoid", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::sigmoid(to_tensor(fn, a[0])));
  });
  reg("tanh", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::tanh(to_tensor(fn, a[0])));
  });

  // ---- dropout: (p, training, inplace) --------------------------------------
  struct Drop {
    const char* name;
    bool feature;
    bool alpha;
  };
  static constexpr Drop kDrops[] = {
      {"dropout", false, false},  {"dropout1d", true, false},     {"dropout2d", true, false},
      {"dropout3d", true, false}, {"alpha_dropout", false, true}, {"feature_alpha_dropout", true, true},
  };
  for (const Drop& d : kDrops) {
    const Drop* dp = &d;
    reg(d.name, [dp](const std::string& fn, std::vector<c10::IValue>& a) {
      at::Tensor x = to_tensor(fn, a[0]);
      const double p = to_double(fn, a[1]);
      if (p < 0.0 || p > 1.0)
        throw Error(fn + ": ValueError: dropout probability has to be between 0 and 1, but got " +
                    std::to_string(p));
      const bool train = to_bool(fn, a[2]), inplace = to_bool(fn, a[3]);
      if (dp->alpha)
        return c10::IValue(
            dp->feature
                ? (inplace ? at::feature_alpha_dropout_(x, p, train) : at::feature_alpha_dropout(x, p, train))
                : (inplace ? at::alpha_dropout_(x, p, train) : at::alpha_dropout(x, p, train)));
      if (dp->feature)
        return c10::IValue(inplace ? at::feature_dropout_(x, p, train) : at::feature_dropout(x, p, train));
      return c10::IValue(inplace ? at::dropout_(x, p, train) : at::dropout(x, p, train));
    });
  }

  // ---- softmax family: (dim=None, _stacklevel=3, dtype=None) ---------------
  for (const char* name : {"softmax", "log_softmax", "softmin"}) {
    const std::string n = name;
    reg(n, [n](const std::string& fn, std::vector<c10::IValue>& a) {
      at::Tensor x = to_tensor(fn, a[0]);
      const int64_t dim = softmax_dim(fn, a[1], x.dim());
      auto dtype = opt_dtype(fn, a[3]);
      if (n == "softmax") return c10::IValue(at::softmax(x, dim, dtype));
      if (n == "log_softmax") return c10::IValue(at::log_softmax(x, dim, dtype));
      return c10::IValue(at::softmax(-x, dim, dtype));
    });
  }

  // ---- normalization: Python argument order differs from ATen's -------------
  reg("batch_norm", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor x = to_tensor(fn, a[0]);
    const bool training = to_bool(fn, a[5]);
    if (training) {  // F._verify_batch_size
      int64_t size_prods = x.size(0);
      for (int64_t i = 2; i < x.dim(); ++i) size_prods *= x.size(i);
      if (size_prods == 1)
        throw Error(fn + ": ValueError: Expected more than 1 value per channel when training");
    }
    return c10::IValue(at::batch_norm(
        x, to_opt_tensor(fn, a[3]), to_opt_tensor(fn, a[4]), to_opt_tensor(fn, a[1]), to_opt_tensor(fn, a[2]),
        training, to_double(fn, a[6]), to_double(fn, a[7]), at::globalContext().userEnabledCuDNN()));
  });
  reg("instance_norm", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::instance_norm(to_tensor(fn, a[0]), to_opt_tensor(fn, a[3]),
                                         to_opt_tensor(fn, a[4]), to_opt_tensor(fn, a[1]),
                                         to_opt_tensor(fn, a[2]), to_bool(fn, a[5]), to_double(fn, a[6]),
                                         to_double(fn, a[7]), at::globalContext().userEnabledCuDNN()));
  });
  reg("layer_norm", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::layer_norm(to_tensor(fn, a[0]), to_int_list(fn, a[1], 1), to_opt_tensor(fn, a[2]),
                                      to_opt_tensor(fn, a[3]), to_double(fn, a[4]),
                                      at::globalContext().userEnabledCuDNN()));
  });
  reg("group_norm", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::group_norm(to_tensor(fn, a[0]), to_int(fn, a[1]), to_opt_tensor(fn, a[2]),
                                      to_opt_tensor(fn, a[3]), to_double(fn, a[4]),
                                      at::globalContext().userEnabledCuDNN()));
  });
  reg("normalize", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor x = to_tensor(fn, a[0]);
    at::Tensor denom =
        x.norm(to_scalar(fn, a[1]), {to_int(fn, a[2])}, true).clamp_min(to_double(fn, a[3])).expand_as(x);
    if (!a[4].isNone()) {
      at::Tensor out = to_tensor(fn, a[4]);
      return c10::IValue(at::div_out(out, x, denom));
    }
    return c10::IValue(x / denom);
  });

  // ---- pooling: stride=None means kernel_size; return_indices ---------------
  // F.max_poolNd is a boolean dispatch on return_indices; torch.fx records
  // the branch taken, max_poolNd_with_indices when it is true, which returns
  // the indices whatever its return_indices says.
  for (int nd = 1; nd <= 3; ++nd)
    for (const bool with_indices : {false, true}) {
      const size_t n = static_cast<size_t>(nd);
      reg("max_pool" + std::to_string(nd) + "d" + (with_indices ? "_with_indices" : ""),
          [n, with_indices](const std::string& fn, std::vector<c10::IValue>& a) {
            at::Tensor x = to_tensor(fn, a[0]);
            auto k = to_int_list(fn, a[1], n);
            auto s = a[2].isNone() ? k : to_int_list(fn, a[2], n);
            auto p = to_int_list(fn, a[3], n), d = to_int_list(fn, a[4], n);
            const bool ceil = to_bool(fn, a[5]), idx = with_indices || to_bool(fn, a[6]);
            if (n == 1)
              return idx ? pair(at::max_pool1d_with_indices(x, k, s, p, d, ceil))
                         : c10::IValue(at::max_pool1d(x, k, s, p, d, ceil));
            if (n == 2)
              return idx ? pair(at::max_pool2d_with_indices(x, k, s, p, d, ceil))
                         : c10::IValue(at::max_pool2d(x, k, s, p, d, ceil));
            return idx ? pair(at::max_pool3d_with_indices(x, k, s, p, d, ceil))
                       : c10::IValue(at::max_pool3d(x, k, s, p, d, ceil));
          });
    }
  reg("avg_pool1d", [](const std::string& fn, std::vector<c10::IValue>& a) {
    auto k = to_int_list(fn, a[1], 1);
    return c10::IValue(at::avg_pool1d(to_tensor(fn, a[0]), k, a[2].isNone() ? k : to_int_list(fn, a[2], 1),
                                      to_int_list(fn, a[3], 1), to_bool(fn, a[4]), to_bool(fn, a[5])));
  });
  for (int nd = 2; nd <= 3; ++nd) {
    const size_t n = static_cast<size_t>(nd);
    reg("avg_pool" + std::to_string(nd) + "d", [n](const std::string& fn, std::vector<c10::IValue>& a) {
      at::Tensor x = to_tensor(fn, a[0]);
      auto k = to_int_list(fn, a[1], n);
      auto s = a[2].isNone() ? k : to_int_list(fn, a[2], n);
      auto p = to_int_list(fn, a[3], n);
      c10::optional<int64_t> div = a[6].isNone() ? c10::nullopt : c10::optional<int64_t>(to_int(fn, a[6]));
      if (n == 2) return c10::IValue(at::avg_pool2d(x, k, s, p, to_bool(fn, a[4]), to_bool(fn, a[5]), div));
      return c10::IValue(at::avg_pool3d(x, k, s, p, to_bool(fn, a[4]), to_bool(fn, a[5]), div));
    });
  }
  for (int nd = 1; nd <= 3; ++nd) {
    const size_t n = static_cast<size_t>(nd);
    reg("adaptive_avg_pool" + std::to_string(nd) + "d",
        [n](const std::string& fn, std::vector<c10::IValue>& a) {
          at::Tensor x = to_tensor(fn, a[0]);
          auto o = adaptive_size(fn, x, a[1], n);
          if (n == 1) return c10::IValue(at::adaptive_avg_pool1d(x, o));
          if (n == 2) return c10::IValue(at::adaptive_avg_pool2d(x, o));
          return c10::IValue(at::adaptive_avg_pool3d(x, o));
        });
    for (const bool with_indices : {false, true})
      reg("adaptive_max_pool" + std::to_string(nd) + "d" + (with_indices ? "_with_indices" : ""),
          [n, with_indices](const std::string& fn, std::vector<c10::IValue>& a) {
            at::Tensor x = to_tensor(fn, a[0]);
            auto o = adaptive_size(fn, x, a[1], n);
            auto r = n == 1   ? at::adaptive_max_pool1d(x, o)
                     : n == 2 ? at::adaptive_max_pool2d(x, o)
                              : at::adaptive_max_pool3d(x, o);
            return with_indices || to_bool(fn, a[2]) ? pair(r) : c10::IValue(std::get<0>(r));
          });
  }

  // ---- unfold / fold: im2col / col2im with every size a pair -------------------
  reg("unfold", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::im2col(to_tensor(fn, a[0]), to_int_list(fn, a[1], 2), to_int_list(fn, a[2], 2),
                                  to_int_list(fn, a[3], 2), to_int_list(fn, a[4], 2)));
  });
  reg("fold", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::col2im(to_tensor(fn, a[0]), to_int_list(fn, a[1], 2), to_int_list(fn, a[2], 2),
                                  to_int_list(fn, a[3], 2), to_int_list(fn, a[4], 2),
                                  to_int_list(fn, a[5], 2)));
  });

  // ---- grid_sample: mode and padding_mode by name; align_corners=None is False
  reg("grid_sample", [](const std::string& fn, std::vector<c10::IValue>& a) {
    // The position of the name in ATen's enum, or Python's ValueError.
    auto enum_of = [&](const c10::IValue& v, const char* what, std::vector<std::string> names,
                       const char* listed) {
      const std::string name = to_str(fn, v);
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return static_cast<int64_t>(i);
      throw Error(fn + ": ValueError: nn.functional.grid_sample(): expected " + what + " to be " + listed +
                  ", but got: '" + name + "'");
    };
    const int64_t mode_enum =
        enum_of(a[2], "mode", {"bilinear", "nearest", "bicubic"}, "'bilinear', 'nearest' or 'bicubic'");
    const int64_t padding_enum = enum_of(a[3], "padding_mode", {"zeros", "border", "reflection"},
                                         "'zeros', 'border', or 'reflection'");
    const bool align = a[4].isNone() ? false : to_bool(fn, a[4]);
    return c10::IValue(
        at::grid_sampler(to_tensor(fn, a[0]), to_tensor(fn, a[1]), mode_enum, padding_enum, align));
  });

  // ---- interpolate: size / scale_factor -> the upsample_* kernel ------------
  for (const char* name : {"interpolate", "upsample"}) {
    reg(name, [](const std::string& fn, std::vector<c10::IValue>& a) {
      // F.upsample(input, size, scale_factor, mode, align_corners) is
      // interpolate with the rest of its parameters left to their defaults.
      if (a.size() == 5) a.insert(a.end(), {c10::IValue(), false});
      at::Tensor x = to_tensor(fn, a[0]);
      const int64_t dim = x.dim() - 2;
      if (dim < 1 || dim > 3)
        throw Error(fn + ": expected a 3-D, 4-D or 5-D input, got " + std::to_string(x.dim()) + "-D");
      const size_t n = static_cast<size_t>(dim);
      const std::string mode = to_str(fn, a[3]);
      if (!a[1].isNone() && !a[2].isNone())
        throw Error(fn + ": ValueError: only one of size or scale_factor should be defined");
      std::optional<std::vector<int64_t>> size;
      std::optional<std::vector<double>> scales;
      if (!a[1].isNone()) {
        size = to_int_list(fn, a[1], n);
        if (size->size() != n) throw Error(fn + ": ValueError: size shape must match input shape");
      } else if (!a[2].isNone()) {
        if (is_sequence(a[2])) {
          scales.emplace();
          for (const auto& e : sequence_items(a[2])) scales->push_back(to_double(fn, e));
          if (scales->size() != n)
            throw Error(fn + ": ValueError: scale_factor shape must match input shape");
        } else {
          scales = std::vector<double>(n, to_double(fn, a[2]));
        }
      } else {
        throw Error(fn + ": ValueError: either size or scale_factor should be defined");
      }
      const bool linear = mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
      if (!linear && !a[4].isNone())
        throw Error(fn +
                    ": ValueError: align_corners option can only be set with the interpolating modes: "
                    "linear | bilinear | bicubic | trilinear");
      const bool align = a[4].isNone() ? false : to_bool(fn, a[4]);
      const bool recompute = !a[5].isNone() && to_bool(fn, a[5]);
      if ((recompute || mode == "area") && scales) {
        size.emplace();
        for (size_t i = 0; i < n; ++i)
          size->push_back(static_cast<int64_t>(
              std::floor(static_cast<double>(x.size(static_cast<int64_t>(i) + 2)) * (*scales)[i])));
        if (recompute) scales.reset();
      }
      at::OptionalIntArrayRef os = size ? at::OptionalIntArrayRef(*size) : at::OptionalIntArrayRef();
      c10::optional<at::ArrayRef<double>> sf =
          scales ? c10::optional<at::ArrayRef<double>>(*scales) : c10::nullopt;
      if (mode == "nearest") {
        if (n == 1) return c10::IValue(at::upsample_nearest1d(x, os, sf));
        if (n == 2) return c10::IValue(at::upsample_nearest2d(x, os, sf));
        return c10::IValue(at::upsample_nearest3d(x, os, sf));
      }
      if (mode == "nearest-exact") {
        if (n == 1) return c10::IValue(at::_upsample_nearest_exact1d(x, os, sf));
        if (n == 2) return c10::IValue(at::_upsample_nearest_exact2d(x, os, sf));
        return c10::IValue(at::_upsample_nearest_exact3d(x, os, sf));
      }
      if (mode == "area") {
        if (n == 1) return c10::IValue(at::adaptive_avg_pool1d(x, *size));
        if (n == 2) return c10::IValue(at::adaptive_avg_pool2d(x, *size));
        return c10::IValue(at::adaptive_avg_pool3d(x, *size));
      }
      const bool aa = to_bool(fn, a[6]);
      if (mode == "linear" && n == 1) return c10::IValue(at::upsample_linear1d(x, os, align, sf));
      if (mode == "bilinear" && n == 2)
        return c10::IValue(aa ? at::_upsample_bilinear2d_aa(x, os, align, sf)
                              : at::upsample_bilinear2d(x, os, align, sf));
      if (mode == "bicubic" && n == 2)
        return c10::IValue(aa ? at::_upsample_bicubic2d_aa(x, os, align, sf)
                              : at::upsample_bicubic2d(x, os, align, sf));
      if (mode == "trilinear" && n == 3) return c10::IValue(at::upsample_trilinear3d(x, os, align, sf));
      throw Error(fn + ": NotImplementedError: input of " + std::to_string(x.dim()) + "-D with mode '" +
                  mode + "' is not supported");
    });
  }

  // ---- embedding: F's (input, weight) vs aten's (weight, indices) -----------
  reg("embedding", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor input = to_tensor(fn, a[0]), weight = to_tensor(fn, a[1]);
    int64_t padding_idx = -1;
    if (!a[2].isNone()) {
      padding_idx = to_int(fn, a[2]);
      if (padding_idx >= weight.size(0) || padding_idx < -weight.size(0))
        throw Error(fn + ": padding_idx must be within num_embeddings");
      if (padding_idx < 0) padding_idx += weight.size(0);
    }
    if (!a[3].isNone()) {
      at::NoGradGuard no_grad;
      at::embedding_renorm_(weight, input.contiguous(), to_double(fn, a[3]), to_double(fn, a[4]));
    }
    return c10::IValue(at::embedding(weight, input, padding_idx, to_bool(fn, a[5]), to_bool(fn, a[6])));
  });

  // ---- losses: legacy size_average/reduce, reduction string -> enum ---------
  reg("cross_entropy", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::cross_entropy_loss(to_tensor(fn, a[0]), to_tensor(fn, a[1]),
                                              to_opt_tensor(fn, a[2]), reduction_enum(fn, a[3], a[5], a[6]),
                                              to_int(fn, a[4]), to_double(fn, a[7])));
  });
  reg("nll_loss", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::nll_loss_nd(to_tensor(fn, a[0]), to_tensor(fn, a[1]), to_opt_tensor(fn, a[2]),
                                       reduction_enum(fn, a[3], a[5], a[6]), to_int(fn, a[4])));
  });
  for (const char* name : {"mse_loss", "l1_loss"}) {
    const bool mse = std::string(name) == "mse_loss";
    reg(name, [mse](const std::string& fn, std::vector<c10::IValue>& a) {
      const at::Tensor input = to_tensor(fn, a[0]);
      auto b = at::broadcast_tensors({input, to_tensor(fn, a[1])});
      const int64_t r = reduction_enum(fn, a[2], a[3], a[4]);
      if (a[5].isNone()) return c10::IValue(mse ? at::mse_loss(b[0], b[1], r) : at::l1_loss(b[0], b[1], r));
      // torch 2.x's `weight`: Python weighs each error itself, and its mean
      // divides by the weights' sum.
      const at::Tensor weight = to_tensor(fn, a[5]);
      if (weight.sizes() != input.sizes())
        throw Error(fn + ": ValueError: Weights and input must have the same size.");
      const at::Tensor errors = (mse ? at::pow(b[0] - b[1], 2) : at::abs(b[0] - b[1])) * weight;
      if (r == at::Reduction::None) return c10::IValue(errors);
      if (r == at::Reduction::Sum) return c10::IValue(at::sum(errors));
      return c10::IValue(at::sum(errors) / at::sum(weight));
    });
  }
  reg("smooth_l1_loss", [](const std::string& fn, std::vector<c10::IValue>& a) {
    auto b = at::broadcast_tensors({to_tensor(fn, a[0]), to_tensor(fn, a[1])});
    const int64_t r = reduction_enum(fn, a[2], a[3], a[4]);
    const double beta = to_double(fn, a[5]);
    return c10::IValue(beta == 0.0 ? at::l1_loss(b[0], b[1], r) : at::smooth_l1_loss(b[0], b[1], r, beta));
  });
  reg("binary_cross_entropy_with_logits", [](const std::string& fn, std::vector<c10::IValue>& a) {
    return c10::IValue(at::binary_cross_entropy_with_logits(to_tensor(fn, a[0]), to_tensor(fn, a[1]),
                                                            to_opt_tensor(fn, a[2]), to_opt_tensor(fn, a[6]),
                                                            reduction_enum(fn, a[3], a[4], a[5])));
  });

  // ---- multi-head attention: a Python function in torch (1.13 and 2.14) -----
  reg("multi_head_attention_forward", multi_head_attention);

  // ---- embedding_bag: Python (input, weight, offsets, ..., mode: str) vs ATen
  // (weight, indices, offsets, ..., mode: int), 2-D input as fixed-size bags,
  // and the first of ATen's four results.
  reg("embedding_bag", [](const std::string& fn, std::vector<c10::IValue>& a) {
    at::Tensor input = to_tensor(fn, a[0]), weight = to_tensor(fn, a[1]);
    auto offsets = to_opt_tensor(fn, a[2]);
    auto per_sample_weights = to_opt_tensor(fn, a[8]);
    const std::string mode = to_str(fn, a[6]);
    if (per_sample_weights && input.sizes() != per_sample_weights->sizes())
      throw Error(fn + ": ValueError: embedding_bag: If per_sample_weights (" +
                  c10::str(per_sample_weights->sizes()) +
                  ") is not None, then it must have the same shape as the input (" + c10::str(input.sizes()) +
                  ")");
    if (input.dim() == 2) {
      if (offsets) throw Error(fn + ": ValueError: if input is 2D, then offsets has to be None");
      offsets = at::arange(0, input.numel(), input.size(1), input.options().dtype(input.scalar_type()));
      input = input.reshape(-1);
      if (per_sample_weights) per_sample_weights = per_sample_weights->reshape(-1);
    } else if (input.dim() == 1) {
      if (!offsets) throw Error(fn + ": ValueError: offsets has to be a 1D Tensor but got None");
      if (offsets->dim() != 1) throw Error(fn + ": ValueError: offsets has to be a 1D Tensor");
    } else {
      throw Error(fn + ": ValueError: input has to be 1D or 2D Tensor, but got Tensor of dimension " +
                  std::to_string(input.dim()));
    }
    int64_t mode_enum;
    if (mode == "sum")
      mode_enum = 0;
    else if (mode == "mean")
      mode_enum = 1;
    else if (mode == "max")
      mode_enum = 2;
    else
      throw Error(fn + ": ValueError: mode has to be one of sum, mean or max");
    if (per_sample_weights && mode != "sum")
      throw Error(
          fn +
          ": NotImplementedError: embedding_bag: per_sample_weights was not None. per_sample_weights is "
          "only supported for mode='sum' (got mode='" +
          mode + "'). Please open a feature request on GitHub.");
    c10::optional<int64_t> padding_idx;  // ATen's -1 would be a real (last) row
    if (!a[10].isNone()) {
      padding_idx = to_int(fn, a[10]);
      if (*padding_idx >= weight.size(0) || *padding_idx < -weight.size(0))
        throw Error(fn + ": padding_idx must be within the number of embeddings");
      if (*padding_idx < 0) *padding_idx += weight.size(0);
    }
    if (!a[3].isNone()) {
      at::NoGradGuard no_grad;
      at::embedding_renorm_(weight, input, to_double(fn, a[3]), to_double(fn, a[4]));
    }
    auto r = at::embedding_bag(weight, input, *offsets, to_bool(fn, a[5]), mode_enum, to_bool(fn, a[7]),
                               per_sample_weights, to_bool(fn, a[9]), padding_idx);
    return c10::IValue(std::get<0>(r));
  });
}

}  // namespace fx::runtime
