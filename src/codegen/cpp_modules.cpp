// call_module of fx::nn leaves in C++: the functional form of each module
// (what its forward calls), with the module's configuration as constants and
// its parameters read from the generated class.
#include <fx/error.h>
#include <fx/nn/activation.h>
#include <fx/nn/attention.h>
#include <fx/nn/conv.h>
#include <fx/nn/dropout.h>
#include <fx/nn/embedding.h>
#include <fx/nn/linear.h>
#include <fx/nn/normalization.h>
#include <fx/nn/pooling.h>
#include <fx/nn/shape.h>

#include <optional>

#include "cpp_emit.h"

namespace fx::codegen {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::vector<std::string> items;
  for (int64_t i : v) items.push_back(std::to_string(i));
  return cpp_int_list(items);
}

std::string boolean(bool b) { return b ? "true" : "false"; }

// A pooling argument for ATen: an int list; None entries of an adaptive
// output size keep the input's size there.
std::string pool(const nn::PoolArg& a, const std::string& x, size_t dims) {
  std::vector<std::string> items;
  const auto& v = a.items();
  for (size_t i = 0; i < (a.is_int() ? dims : v.size()); ++i) {
    const auto& item = a.is_int() ? v[0] : v[i];
    items.push_back(item ? std::to_string(*item)
                         : x + ".size(" +
                               std::to_string(static_cast<int64_t>(i) - static_cast<int64_t>(dims)) + ")");
  }
  return cpp_int_list(items);
}

// The call's arguments bound to forward's parameters (nullopt: not passed).
std::vector<std::optional<Argument>> bind(Emitter& e, const Node* n, const Module& m) {
  const auto& params = m.forward_params();
  std::vector<std::optional<Argument>> out(params.size());
  if (n->args().size() > params.size())
    e.fail(n, "passes more arguments than " + m.type_name() + ".forward takes");
  for (size_t i = 0; i < n->args().size(); ++i) out[i] = n->args()[i];
  for (const auto& [k, a] : n->kwargs()) {
    size_t i = 0;
    while (i < params.size() && params[i].name != k) ++i;
    if (i == params.size())
      e.fail(n, "passes '" + k + "', which " + m.type_name() + ".forward does not take");
    out[i] = a;
  }
  return out;
}

}  // namespace

CppValue emit_module_call(Emitter& e, const Node* n, const torch::nn::Module& module) {
  const auto* m = dynamic_cast<const Module*>(&module);
  if (!m || !m->is_standard_leaf())
    e.fail(n, "calls a module that is no fx::nn leaf (" + (m ? m->type_name() : module.name()) +
                  "); export_cpp writes fx::nn modules only (trace through the module instead)");
  const std::string path = n->target().str();
  std::string repr = m->repr();
  e.line("// " + path + ": " + (repr.find('\n') == std::string::npos ? repr : m->type_name()));

  auto args = bind(e, n, *m);
  auto arg = [&](size_t i) {
    if (i >= args.size() || !args[i]) e.fail(n, "does not pass '" + m->forward_params()[i].name + "'");
    return e.value(*args[i]);
  };
  // Only the first parameter passed, as a tensor; the rest at their defaults.
  auto input = [&]() {
    for (size_t i = 1; i < args.size(); ++i)
      if (args[i])
        e.fail(n, "passes '" + m->forward_params()[i].name + "', which export_cpp does not translate for " +
                      m->type_name());
    CppValue x = arg(0);
    if (x.kind != Kind::tensor)
      e.fail(n, "passes a " + std::string(x.kind == Kind::none ? "None" : "non-tensor") + " input");
    return x.expr;
  };
  auto w = [&](const char* name) { return e.weight(path + "." + name); };
  auto opt_w = [&](const at::Tensor& t, const char* name) {
    return t.defined() ? w(name) : std::string("{}");
  };
  auto tensor = [](std::string expr) { return CppValue{std::move(expr), Kind::tensor, {}}; };
  auto in_place = [](bool inplace, const std::string& fn) { return inplace ? fn + "_" : fn; };

  // Weights are looked up one statement at a time: the members are declared in that order.
  if (const auto* l = dynamic_cast<const nn::Linear*>(m)) {
    std::string x = input(), weight = w("weight");
    return tensor("at::linear(" + x + ", " + weight + (l->bias.defined() ? ", " + w("bias") : "") + ")");
  }
  if (const auto* c = dynamic_cast<const nn::ConvNd*>(m)) {
    const bool transposed =
        dynamic_cast<const nn::ConvTranspose1d*>(m) || dynamic_cast<const nn::ConvTranspose2d*>(m);
    if (c->padding_mode != "zeros")
      e.fail(n, "pads with mode '" + c->padding_mode + "'; export_cpp supports 'zeros'");
    std::string x = input(), weight = w("weight");
    std::string b = opt_w(c->bias, "bias");
    size_t dims = c->kernel_size.size();
    if (transposed)
      return tensor("at::conv_transpose" + std::to_string(dims) + "d(" + x + ", " + weight + ", " + b + ", " +
                    ints(c->stride) + ", " + ints(c->padding) + ", " + ints(c->output_padding) + ", " +
                    std::to_string(c->groups) + ", " + ints(c->dilation) + ")");
    return tensor("at::conv" + std::to_string(dims) + "d(" + x + ", " + weight + ", " + b + ", " +
                  ints(c->stride) + ", " + ints(c->padding) + ", " + ints(c->dilation) + ", " +
                  std::to_string(c->groups) + ")");
  }
  if (const auto* bn = dynamic_cast<const nn::BatchNormNd*>(m)) {
    std::string x = input();
    const bool use_batch_stats = bn->is_training() || !bn->running_mean.defined();
    const bool update_stats = bn->is_training() && bn->track_running_stats && bn->running_mean.defined();
    double momentum = bn->momentum.value_or(0.0);
    if (update_stats) {
      if (!bn->momentum)
        e.fail(n, "is a BatchNorm in training mode with momentum=None (a cumulative average)");
      e.line(w("num_batches_tracked") + ".add_(1);");
    }
    // Running statistics are read in eval mode and updated in training mode.
    const bool pass_stats = !bn->is_training() || bn->track_running_stats;
    std::string weight = opt_w(bn->weight, "weight"), bias = opt_w(bn->bias, "bias");
    std::string mean = pass_stats ? opt_w(bn->running_mean, "running_mean") : "{}";
    std::string var = pass_stats ? opt_w(bn->running_var, "running_var") : "{}";
    return tensor("at::batch_norm(" + x + ", " + weight + ", " + bias + ", " + mean + ", " + var + ", " +
                  boolean(use_batch_stats) + ", " + cpp_double(momentum) + ", " + cpp_double(bn->eps) +
                  ", /*cudnn_enabled=*/true)");
  }
  if (const auto* ln = dynamic_cast<const nn::LayerNorm*>(m)) {
    std::string x = input(), weight = opt_w(ln->weight, "weight"), bias = opt_w(ln->bias, "bias");
    return tensor("at::layer_norm(" + x + ", " + ints(ln->normalized_shape) + ", " + weight + ", " + bias +
                  ", " + cpp_double(ln->eps) + ")");
  }
  if (const auto* gn = dynamic_cast<const nn::GroupNorm*>(m)) {
    std::string x = input(), weight = opt_w(gn->weight, "weight"), bias = opt_w(gn->bias, "bias");
    return tensor("at::group_norm(" + x + ", " + std::to_string(gn->num_groups) + ", " + weight + ", " +
                  bias + ", " + cpp_double(gn->eps) + ")");
  }
  if (const auto* r = dynamic_cast<const nn::ReLU*>(m))
    return tensor("at::" + in_place(r->inplace, "relu") + "(" + input() + ")");
  if (const auto* r = dynamic_cast<const nn::ReLU6*>(m))
    return tensor("at::" + in_place(r->inplace, "hardtanh") + "(" + input() + ", " + cpp_double(r->min_val) +
                  ", " + cpp_double(r->max_val) + ")");
  if (const auto* r = dynamic_cast<const nn::LeakyReLU*>(m))
    return tensor("at::" + in_place(r->inplace, "leaky_relu") + "(" + input() + ", " +
                  cpp_double(r->negative_slope) + ")");
  if (const auto* g = dynamic_cast<const nn::GELU*>(m))
    return tensor("at::gelu(" + input() + ", " + cpp_string(g->approximate) + ")");
  if (const auto* s = dynamic_cast<const nn::SiLU*>(m))
    return tensor("at::" + in_place(s->inplace, "silu") + "(" + input() + ")");
  if (const auto* s = dynamic_cast<const nn::Mish*>(m))
    return tensor("at::" + in_place(s->inplace, "mish") + "(" + input() + ")");
  if (const auto* s = dynamic_cast<const nn::Hardswish*>(m))
    return tensor("at::" + in_place(s->inplace, "hardswish") + "(" + input() + ")");
  if (const auto* s = dynamic_cast<const nn::Hardsigmoid*>(m))
    return tensor("at::" + in_place(s->inplace, "hardsigmoid") + "(" + input() + ")");
  if (dynamic_cast<const nn::Sigmoid*>(m)) return tensor("at::sigmoid(" + input() + ")");
  if (dynamic_cast<const nn::Tanh*>(m)) return tensor("at::tanh(" + input() + ")");
  if (const auto* s = dynamic_cast<const nn::Softmax*>(m)) {
    if (!s->dim) e.fail(n, "is a Softmax without dim (PyTorch's legacy choice); give it a dim");
    return tensor("at::softmax(" + input() + ", " + std::to_string(*s->dim) + ")");
  }
  if (const auto* s = dynamic_cast<const nn::LogSoftmax*>(m)) {
    if (!s->dim) e.fail(n, "is a LogSoftmax without dim (PyTorch's legacy choice); give it a dim");
    return tensor("at::log_softmax(" + input() + ", " + std::to_string(*s->dim) + ")");
  }
  if (const auto* p = dynamic_cast<const nn::MaxPoolNd*>(m)) {
    if (p->return_indices) e.fail(n, "returns indices; export_cpp supports return_indices=False");
    size_t dims = dynamic_cast<const nn::MaxPool1d*>(m) ? 1 : 2;
    std::string x = input();
    return tensor("at::max_pool" + std::to_string(dims) + "d(" + x + ", " + pool(p->kernel_size, x, dims) +
                  ", " + pool(p->stride, x, dims) + ", " + pool(p->padding, x, dims) + ", " +
                  pool(p->dilation, x, dims) + ", " + boolean(p->ceil_mode) + ")");
  }
  if (const auto* p = dynamic_cast<const nn::AvgPool2d*>(m)) {
    std::string x = input();
    return tensor("at::avg_pool2d(" + x + ", " + pool(p->kernel_size, x, 2) + ", " + pool(p->stride, x, 2) +
                  ", " + pool(p->padding, x, 2) + ", " + boolean(p->ceil_mode) + ", " +
                  boolean(p->count_include_pad) + ", " +
                  (p->divisor_override ? std::to_string(*p->divisor_override) : "c10::nullopt") + ")");
  }
  if (const auto* p = dynamic_cast<const nn::AdaptiveAvgPoolNd*>(m)) {
    size_t dims = dynamic_cast<const nn::AdaptiveAvgPool1d*>(m) ? 1 : 2;
    std::string x = input();
    return tensor("at::adaptive_avg_pool" + std::to_string(dims) + "d(" + x + ", " +
                  pool(p->output_size, x, dims) + ")");
  }
  if (const auto* d = dynamic_cast<const nn::Dropout*>(m)) {
    // Dropout2d drops whole channels: ATen's feature_dropout.
    std::string fn = dynamic_cast<const nn::Dropout2d*>(m) ? "feature_dropout" : "dropout";
    return tensor("at::" + in_place(d->inplace, fn) + "(" + input() + ", " + cpp_double(d->p) +
                  ", /*train=*/" + boolean(d->is_training()) + ")");
  }
  if (dynamic_cast<const nn::Identity*>(m)) return tensor(input());
  if (const auto* f = dynamic_cast<const nn::Flatten*>(m))
    return tensor(input() + ".flatten(" + std::to_string(f->start_dim) + ", " + std::to_string(f->end_dim) +
                  ")");
  if (const auto* u = dynamic_cast<const nn::Unflatten*>(m))
    return tensor(input() + ".unflatten(" + std::to_string(u->dim) + ", " + ints(u->unflattened_size) + ")");
  if (const auto* em = dynamic_cast<const nn::Embedding*>(m)) {
    if (em->max_norm) e.fail(n, "is an Embedding with max_norm (it renormalizes its weight in place)");
    std::string x = input();
    return tensor("at::embedding(" + w("weight") + ", " + x + ", " +
                  std::to_string(em->padding_idx.value_or(-1)) + ", " + boolean(em->scale_grad_by_freq) +
                  ", " + boolean(em->sparse) + ")");
  }
  if (const auto* a = dynamic_cast<const nn::MultiheadAttention*>(m)) {
    // torch.nn.MultiheadAttention.forward: F.multi_head_attention_forward on
    // (sequence, batch, feature) inputs, transposed around it when batch_first.
    CppValue q = arg(0), k = arg(1), v = arg(2);
    auto opt_arg = [&](size_t i) -> std::optional<CppValue> {
      if (!args[i] || args[i]->is_none()) return std::nullopt;
      return e.value(*args[i]);
    };
    auto key_padding_mask = opt_arg(3), attn_mask = opt_arg(5);
    auto need_weights = opt_arg(4), average = opt_arg(6);
    for (const auto* x : {&q, &k, &v})
      if (x->kind != Kind::tensor) e.fail(n, "passes a query, key or value that is not a tensor");
    auto seq_first = [&](const CppValue& x) { return a->batch_first ? x.expr + ".transpose(1, 0)" : x.expr; };
    std::vector<std::string> ws;
    ws.push_back(opt_w(a->in_proj_weight, "in_proj_weight"));
    ws.push_back(opt_w(a->in_proj_bias, "in_proj_bias"));
    ws.push_back(opt_w(a->bias_k, "bias_k"));
    ws.push_back(opt_w(a->bias_v, "bias_v"));
    ws.push_back(w("out_proj.weight"));
    ws.push_back(opt_w(a->out_proj->bias, "out_proj.bias"));
    std::string options = "torch::nn::functional::MultiheadAttentionForwardFuncOptions(" +
                          std::to_string(a->embed_dim) + ", " + std::to_string(a->num_heads) + ", " + ws[0] +
                          ", " + ws[1] + ", " + ws[2] + ", " + ws[3] + ", " + boolean(a->add_zero_attn) +
                          ", " + cpp_double(a->dropout) + ", " + ws[4] + ", " + ws[5] + ")";
    options += "\n          .training(" + boolean(a->is_training()) + ")";
    if (key_padding_mask) options += ".key_padding_mask(" + key_padding_mask->expr + ")";
    if (need_weights) options += ".need_weights(" + need_weights->expr + ")";
    if (attn_mask) options += ".attn_mask(" + attn_mask->expr + ")";
    if (average) options += ".average_attn_weights(" + average->expr + ")";
    if (!a->in_proj_weight.defined()) {
      std::string q_w = w("q_proj_weight"), k_w = w("k_proj_weight"), v_w = w("v_proj_weight");
      options += ".use_separate_proj_weight(true).q_proj_weight(" + q_w + ").k_proj_weight(" + k_w +
                 ").v_proj_weight(" + v_w + ")";
    }
    std::string call = "torch::nn::functional::multi_head_attention_forward(\n      " + seq_first(q) + ", " +
                       seq_first(k) + ", " + seq_first(v) + ",\n      " + options + ")";
    if (!a->batch_first) return CppValue{call, Kind::tuple, {Kind::tensor, Kind::tensor}};
    std::string tmp = e.temp(path + "_seq_first");
    e.line("auto " + tmp + " = " + call + ";");
    return CppValue{"std::make_tuple(std::get<0>(" + tmp + ").transpose(1, 0), std::get<1>(" + tmp + "))",
                    Kind::tuple,
                    {Kind::tensor, Kind::tensor}};
  }
  e.fail(n, "calls " + m->type_name() + ", which export_cpp does not translate");
}

}  // namespace fx::codegen
