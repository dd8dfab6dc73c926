// The three functions of torchvision/models/swin_transformer.py that
// torchvision wraps with torch.fx.wrap, so that torch.fx records each as one
// call_function node: `_patch_merging_pad`, `_get_relative_position_bias` and
// `shifted_window_attention`. Each follows torchvision 0.29's Python line by
// line, so that a swin_* GraphModule traced in Python gives eager's outputs.
#include <fx/runtime_args.h>

#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <limits>

#include "register.h"

namespace fx::torchvision {
namespace {

using namespace fx::runtime;

const std::string kSwin = "torchvision.models.swin_transformer.";
constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();  // a slice's `None` end

// window_size and shift_size: two ints, window sizes positive (Python would
// divide by zero otherwise).
std::vector<int64_t> pair_of_ints(const std::string& fn, const std::string& what, const c10::IValue& v,
                                  bool positive) {
  std::vector<int64_t> p = to_int_list(fn, v);
  if (p.size() != 2) throw Error(fn + ": " + what + " must hold 2 ints, got " + std::to_string(p.size()));
  for (int64_t e : p)
    if (positive && e <= 0) throw Error(fn + ": " + what + " must be positive, got " + std::to_string(e));
  return p;
}

// F.normalize(t, dim=-1): t / max(||t||_2, 1e-12).
at::Tensor normalize_last(const at::Tensor& t) {
  return t / t.norm(2, {-1}, /*keepdim=*/true).clamp_min(1e-12).expand_as(t);
}

// The mask that keeps the shifted windows' tokens from attending across the
// cyclic shift's seam: regions numbered as torchvision numbers them, then 0
// between tokens of the same region and -100 otherwise.
at::Tensor shifted_window_mask(const at::Tensor& like, int64_t pad_h, int64_t pad_w,
                               const std::vector<int64_t>& window, const std::vector<int64_t>& shift,
                               int64_t num_windows) {
  at::Tensor mask = at::zeros({pad_h, pad_w}, like.options());
  const std::array<std::pair<int64_t, int64_t>, 3> h_slices{
      {{0, -window[0]}, {-window[0], -shift[0]}, {-shift[0], kToEnd}}};
  const std::array<std::pair<int64_t, int64_t>, 3> w_slices{
      {{0, -window[1]}, {-window[1], -shift[1]}, {-shift[1], kToEnd}}};
  int64_t count = 0;
  for (const auto& [h0, h1] : h_slices)
    for (const auto& [w0, w1] : w_slices) mask.slice(0, h0, h1).slice(1, w0, w1).fill_(count++);
  mask = mask.view({pad_h / window[0], window[0], pad_w / window[1], window[1]})
             .permute({0, 2, 1, 3})
             .reshape({num_windows, window[0] * window[1]});
  mask = mask.unsqueeze(1) - mask.unsqueeze(2);
  return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0);
}

void register_patch_merging_pad() {
  const std::string fn = kSwin + "_patch_merging_pad";
  const std::vector<Param> params{req("x")};
  register_function(
      fn, make_callable(fn, [fn, params](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
        auto a = bind(fn, params, args, kwargs);
        at::Tensor x = to_tensor(fn, a[0]);
        if (x.dim() < 3)
          throw Error(fn + ": expected a tensor of at least 3 dimensions (..., H, W, C), got " +
                      std::to_string(x.dim()));
        const int64_t h = x.size(-3), w = x.size(-2);
        x = at::constant_pad_nd(x, {0, 0, 0, w % 2, 0, h % 2});
        auto quarter = [&](int64_t row, int64_t col) {
          return x.slice(-3, row, kToEnd, 2).slice(-2, col, kToEnd, 2);
        };
        return c10::IValue(at::cat({quarter(0, 0), quarter(1, 0), quarter(0, 1), quarter(1, 1)}, -1));
      }));
}

void register_relative_position_bias() {
  const std::string fn = kSwin + "_get_relative_position_bias";
  const std::vector<Param> params{req("relative_position_bias_table"), req("relative_position_index"),
                                  req("window_size")};
  register_function(fn, make_callable(fn, [fn, params](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
                      auto a = bind(fn, params, args, kwargs);
                      const at::Tensor table = to_tensor(fn, a[0]);
                      const at::Tensor index = to_tensor(fn, a[1]);
                      const std::vector<int64_t> window =
                          pair_of_ints(fn, "window_size", a[2], /*positive=*/false);
                      const int64_t n = window[0] * window[1];
                      at::Tensor bias = at::index(table, {index}).view({n, n, -1});
                      return c10::IValue(bias.permute({2, 0, 1}).contiguous().unsqueeze(0));
                    }));
}

void register_shifted_window_attention() {
  const std::string fn = kSwin + "shifted_window_attention";
  const std::vector<Param> params{req("input"),
                                  req("qkv_weight"),
                                  req("proj_weight"),
                                  req("relative_position_bias"),
                                  req("window_size"),
                                  req("num_heads"),
                                  req("shift_size"),
                                  opt("attention_dropout", 0.0),
                                  opt("dropout", 0.0),
                                  opt("qkv_bias", c10::IValue()),
                                  opt("proj_bias", c10::IValue()),
                                  opt("logit_scale", c10::IValue()),
                                  opt("training", true)};
  register_function(
      fn, make_callable(fn, [fn, params](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
        auto a = bind(fn, params, args, kwargs);
        const at::Tensor input = to_tensor(fn, a[0]);
        const at::Tensor qkv_weight = to_tensor(fn, a[1]);
        const at::Tensor proj_weight = to_tensor(fn, a[2]);
        const at::Tensor relative_position_bias = to_tensor(fn, a[3]);
        const std::vector<int64_t> window = pair_of_ints(fn, "window_size", a[4], /*positive=*/true);
        const int64_t num_heads = to_int(fn, a[5]);
        std::vector<int64_t> shift = pair_of_ints(fn, "shift_size", a[6], /*positive=*/false);
        const double attention_dropout = to_double(fn, a[7]);
        const double dropout = to_double(fn, a[8]);
        c10::optional<at::Tensor> qkv_bias = to_opt_tensor(fn, a[9]);
        const c10::optional<at::Tensor> proj_bias = to_opt_tensor(fn, a[10]);
        const c10::optional<at::Tensor> logit_scale = to_opt_tensor(fn, a[11]);
        const bool training = to_bool(fn, a[12]);
        if (input.dim() != 4)
          throw Error(fn + ": expected input of 4 dimensions (N, H, W, C), got " +
                      std::to_string(input.dim()));
        if (num_heads <= 0)
          throw Error(fn + ": num_heads must be positive, got " + std::to_string(num_heads));

        const int64_t b = input.size(0), h = input.size(1), w = input.size(2), c = input.size(3);
        // Pad the feature map to multiples of the window size.
        const int64_t pad_r = (window[1] - w % window[1]) % window[1];
        const int64_t pad_b = (window[0] - h % window[0]) % window[0];
        at::Tensor x = at::constant_pad_nd(input, {0, 0, 0, pad_r, 0, pad_b});
        const int64_t pad_h = x.size(1), pad_w = x.size(2);
        // No shift along a dimension the window already covers.
        if (window[0] >= pad_h) shift[0] = 0;
        if (window[1] >= pad_w) shift[1] = 0;
        const bool shifted = shift[0] + shift[1] > 0;
        if (shifted) x = at::roll(x, {-shift[0], -shift[1]}, {1, 2});

        // Partition into windows: (B * nW, Ws * Ws, C).
        const int64_t num_windows = (pad_h / window[0]) * (pad_w / window[1]);
        x = x.view({b, pad_h / window[0], window[0], pad_w / window[1], window[1], c})
                .permute({0, 1, 3, 2, 4, 5})
                .reshape({b * num_windows, window[0] * window[1], c});

        if (logit_scale && qkv_bias) {  // Swin V2 has no bias on the keys
          qkv_bias = qkv_bias->clone();
          const int64_t length = qkv_bias->numel() / 3;
          qkv_bias->slice(0, length, 2 * length).zero_();
        }
        at::Tensor qkv = at::linear(x, qkv_weight, qkv_bias);
        qkv = qkv.reshape({x.size(0), x.size(1), 3, num_heads, c / num_heads}).permute({2, 0, 3, 1, 4});
        at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
        at::Tensor attn;
        if (logit_scale) {  // cosine attention (Swin V2)
          attn = at::matmul(normalize_last(q), normalize_last(k).transpose(-2, -1));
          attn = attn * at::clamp(*logit_scale, c10::nullopt, std::log(100.0)).exp();
        } else {
          q = q * std::pow(static_cast<double>(c / num_heads), -0.5);
          attn = q.matmul(k.transpose(-2, -1));
        }
        attn = attn + relative_position_bias;

        if (shifted) {
          const at::Tensor mask = shifted_window_mask(x, pad_h, pad_w, window, shift, num_windows);
          attn = attn.view({x.size(0) / num_windows, num_windows, num_heads, x.size(1), x.size(1)});
          attn = attn + mask.unsqueeze(1).unsqueeze(0);
          attn = attn.view({-1, num_heads, x.size(1), x.size(1)});
        }
        attn = at::dropout(at::softmax(attn, -1), attention_dropout, training);

        x = attn.matmul(v).transpose(1, 2).reshape({x.size(0), x.size(1), c});
        x = at::dropout(at::linear(x, proj_weight, proj_bias), dropout, training);

        // Reverse the windows, the shift and the padding.
        x = x.view({b, pad_h / window[0], pad_w / window[1], window[0], window[1], c})
                .permute({0, 1, 3, 2, 4, 5})
                .reshape({b, pad_h, pad_w, c});
        if (shifted) x = at::roll(x, {shift[0], shift[1]}, {1, 2});
        return c10::IValue(x.slice(1, 0, h).slice(2, 0, w).contiguous());
      }));
}

}  // namespace

void register_swin_transformer() {
  register_patch_merging_pad();
  register_relative_position_bias();
  register_shifted_window_attention();
}

}  // namespace fx::torchvision
