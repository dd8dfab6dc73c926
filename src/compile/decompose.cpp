// Phase 1 of fx::compile: operators rewritten into the ones the lowering
// fuses, as Inductor's decomposition table does: addmm's bias; reductions
// over the last dimension without keepdim as ones with keepdim and a view,
// and over several dimensions as one over the last and one over the rest;
// softmax, log_softmax and layer_norm over the last dimension as reductions and
// pointwise operators, which the scheduler puts back together as one row
// kernel with what comes before and after them; nll_loss after log_softmax
// as a logsumexp per row and a gather; batch norm in eval mode as
// pointwise operators; the backward of softmax and log_softmax as a row
// reduction and pointwise operators; a tensor of one number as `full`,
// which a kernel reads as that number. Only float32 and float64 are rewritten: the
// lowering fuses nothing else, and ATen's own kernels are faster than the
// pieces.
#include "phases.h"

#include <c10/util/accumulate.h>

#include <algorithm>

namespace fx::compile_detail {

namespace {

bool is_one(const Node& n, const char* key) {
  const Argument* a = n.kwarg(key);
  if (!a) return true;
  if (a->is<int64_t>()) return a->get<int64_t>() == 1;
  if (a->is<double>()) return a->get<double>() == 1.0;
  return false;
}

// Makes nodes before `at` with the tensor_meta the rewrite knows they have.
class Emitter {
 public:
  Emitter(Graph& graph, Node* at) : graph_(graph), at_(at) {}
  Node* call(const char* target, Args args, const passes::TensorMetadata& meta) {
    auto guard = graph_.inserting_before(at_);
    Node* n = graph_.call_function(Target(target), std::move(args));
    n->meta().set("tensor_meta", meta);
    return n;
  }

 private:
  Graph& graph_;
  Node* at_;
};

// The metadata of a value per row of `m` (last dimension 1).
passes::TensorMetadata per_row(passes::TensorMetadata m) {
  m.shape.back() = 1;
  return contiguous(std::move(m));
}

// A float32 or float64 tensor of rank >= 1 whose dimension `dim` is its last one.
const passes::TensorMetadata* last_dim_float(const Argument& x, const Argument& dim) {
  if (!x.is_node() || !dim.is<int64_t>()) return nullptr;
  const passes::TensorMetadata* m = tensor_meta(*x.node());
  if (!m || !fusable_type(m->dtype) || m->shape.empty()) return nullptr;
  const int64_t d = dim.get<int64_t>(), rank = static_cast<int64_t>(m->shape.size());
  return d == -1 || d == rank - 1 ? m : nullptr;
}

const List kLastDim{{Argument(int64_t{-1})}};

// _softmax(x, -1, False): exp(x - amax(x)) / sum(exp(x - amax(x))), and
// _log_softmax: (x - amax(x)) - log(sum(exp(x - amax(x)))).
bool softmax(Graph& graph, Node* n, bool log) {
  if (n->args().size() != 3 || !n->args()[2].is<bool>() || n->args()[2].get<bool>()) return false;
  const passes::TensorMetadata* m = last_dim_float(n->args()[0], n->args()[1]);
  if (!m) return false;
  Emitter e(graph, n);
  const passes::TensorMetadata full = contiguous(*m), row = per_row(*m);
  Node* x = n->args()[0].node();
  Node* max = e.call("torch.ops.aten.amax.default", {x, kLastDim, true}, row);
  Node* shifted = e.call("torch.ops.aten.sub.Tensor", {x, max}, full);
  Node* exp = e.call("torch.ops.aten.exp.default", {shifted}, full);
  Node* sum = e.call("torch.ops.aten.sum.dim_IntList", {exp, kLastDim, true}, row);
  Node* out = log ? e.call("torch.ops.aten.sub.Tensor",
                           {shifted, e.call("torch.ops.aten.log.default", {sum}, row)}, full)
                  : e.call("torch.ops.aten.div.Tensor", {exp, sum}, full);
  n->replace_all_uses_with(out);
  graph.erase_node(n);
  return true;
}

// The backward of softmax and log_softmax over the last dimension, as a
// training step captures it, with y the forward's result and g the
// gradient: _softmax_backward_data is y * g - y * sum(y * g), and
// _log_softmax_backward_data is g - exp(y) * sum(g), each sum over the row
// (keepdim): one row kernel with what computes g.
bool softmax_backward(Graph& graph, Node* n, bool log) {
  const Args& args = n->args();
  if (args.size() != 4 || !args[0].is_node() || !args[3].is<c10::ScalarType>()) return false;
  const passes::TensorMetadata* m = last_dim_float(args[1], args[2]);
  const passes::TensorMetadata* g = tensor_meta(*args[0].node());
  if (!m || !g || g->dtype != m->dtype || g->shape != m->shape || args[3].get<c10::ScalarType>() != m->dtype)
    return false;
  Emitter e(graph, n);
  const passes::TensorMetadata full = contiguous(*m), row = per_row(*m);
  Node* y = args[1].node();
  Node* grad = args[0].node();
  Node* out;
  if (log) {
    Node* sum = e.call("torch.ops.aten.sum.dim_IntList", {grad, kLastDim, true}, row);
    Node* p = e.call("torch.ops.aten.exp.default", {y}, full);
    out = e.call("torch.ops.aten.sub.Tensor", {grad, e.call("torch.ops.aten.mul.Tensor", {p, sum}, full)},
                 full);
  } else {
    Node* yg = e.call("torch.ops.aten.mul.Tensor", {y, grad}, full);
    Node* sum = e.call("torch.ops.aten.sum.dim_IntList", {yg, kLastDim, true}, row);
    out =
        e.call("torch.ops.aten.sub.Tensor", {yg, e.call("torch.ops.aten.mul.Tensor", {y, sum}, full)}, full);
  }
  n->replace_all_uses_with(out);
  graph.erase_node(n);
  return true;
}

// A tensor every element of which is one number: `fill(empty_like(x), v)`
// (which a backward's `1 - sigmoid(x)` is captured as), ones_like,
// zeros_like, full_like. Made by `full` instead, it reads no x: x may then
// stay inside a kernel, and a kernel that reads the tensor takes the
// number as a constant (lower.cpp), so that the tensor is never made.
std::optional<double> constant_value(const Node& n) {
  if (n.args().empty()) return std::nullopt;
  const std::string& t = n.target().str();
  if (t == "torch.ops.aten.fill.Scalar" && n.args().size() == 2) {
    const Node* like = n.args()[0].node();
    if (!like || like->target() != "torch.ops.aten.empty_like.default" || like->num_users() != 1)
      return std::nullopt;
    return number(n.args()[1]);
  }
  if (t == "torch.ops.aten.ones_like.default") return 1.0;
  if (t == "torch.ops.aten.zeros_like.default") return 0.0;
  if (t == "torch.ops.aten.full_like.default" && n.args().size() >= 2) return number(n.args()[1]);
  return std::nullopt;
}

// fx::compile's kernels are CPU's, and so is `full`'s tensor when an ATen
// call reads it.
bool constant_tensor(Graph& graph, Node* n) {
  const std::optional<double> value = constant_value(*n);
  const passes::TensorMetadata* m = tensor_meta(*n);
  if (!value || !m || !fusable_type(m->dtype) || m->stride != contiguous(*m).stride) return false;
  std::vector<Argument> shape(m->shape.begin(), m->shape.end());
  Node* full;
  {
    auto at = graph.inserting_before(n);
    full = graph.call_function(Target("torch.ops.aten.full.default"), {list(std::move(shape)), *value},
                               {{"dtype", m->dtype}});
  }
  full->meta().set("tensor_meta", *m);
  n->replace_all_uses_with(full);
  Node* like = n->target() == "torch.ops.aten.fill.Scalar" ? n->args()[0].node() : nullptr;
  graph.erase_node(n);
  if (like) graph.erase_node(like);
  return true;
}

// Whether only the first result of the multi-output `n` is read: its
// getitem(n, 0) users go into `outputs`, getitems nobody reads into
// `unused`. False when another result is read (a backward reads mean and
// rstd).
bool first_result_only(const Node& n, std::vector<Node*>& outputs, std::vector<Node*>& unused) {
  for (Node* user : n.users()) {
    if (user->target() != "operator.getitem" || user->args().size() != 2 || !user->args()[1].is<int64_t>())
      return false;
    if (user->args()[1].get<int64_t>() == 0)
      outputs.push_back(user);
    else if (user->num_users() == 0)
      unused.push_back(user);
    else
      return false;
  }
  return true;
}

// `y` in place of n's first result; n and its getitems erased.
void replace_first_result(Graph& graph, Node* n, Node* y, const std::vector<Node*>& outputs,
                          const std::vector<Node*>& unused) {
  for (Node* out : outputs) {
    out->replace_all_uses_with(y);
    graph.erase_node(out);
  }
  for (Node* out : unused) graph.erase_node(out);
  graph.erase_node(n);
}

// native_layer_norm(x, [C], w, b, eps) whose mean and rstd nobody reads:
// d = x - mean(x); d * rsqrt(mean(d * d) + eps) * w + b.
bool layer_norm(Graph& graph, Node* n) {
  if (n->args().size() != 5 || !n->args()[1].is<List>() || n->args()[1].get<List>().items.size() != 1)
    return false;
  const passes::TensorMetadata* m = last_dim_float(n->args()[0], Argument(int64_t{-1}));
  const Argument& size = n->args()[1].get<List>().items[0];
  if (!m || !size.is<int64_t>() || size.get<int64_t>() != m->shape.back()) return false;
  double eps = 0;
  if (n->args()[4].is<double>())
    eps = n->args()[4].get<double>();
  else if (n->args()[4].is<int64_t>())
    eps = static_cast<double>(n->args()[4].get<int64_t>());
  else
    return false;
  std::vector<Node*> outputs, unused;
  if (!first_result_only(*n, outputs, unused)) return false;
  for (int i : {2, 3}) {
    const Argument& a = n->args()[i];
    if (!a.is_none() &&
        (!a.is_node() || !tensor_meta(*a.node()) || tensor_meta(*a.node())->dtype != m->dtype))
      return false;
  }
  Emitter e(graph, n);
  const passes::TensorMetadata full = contiguous(*m), row = per_row(*m);
  Node* x = n->args()[0].node();
  Node* mean = e.call("torch.ops.aten.mean.dim", {x, kLastDim, true}, row);
  Node* d = e.call("torch.ops.aten.sub.Tensor", {x, mean}, full);
  Node* var = e.call("torch.ops.aten.mean.dim",
                     {e.call("torch.ops.aten.mul.Tensor", {d, d}, full), kLastDim, true}, row);
  Node* rstd =
      e.call("torch.ops.aten.rsqrt.default", {e.call("torch.ops.aten.add.Scalar", {var, eps}, row)}, row);
  Node* y = e.call("torch.ops.aten.mul.Tensor", {d, rstd}, full);
  if (n->args()[2].is_node()) y = e.call("torch.ops.aten.mul.Tensor", {y, n->args()[2]}, full);
  if (n->args()[3].is_node()) y = e.call("torch.ops.aten.add.Tensor", {y, n->args()[3]}, full);
  replace_first_result(graph, n, y, outputs, unused);
  return true;
}

// native_batch_norm(x, w, b, mean, var, False, momentum, eps) and
// _native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps)
// (batch norm in eval mode) whose saved mean and rstd nobody reads: with
// each per-channel vector viewed as [C, 1, ...], (x - mean) * rsqrt(var +
// eps) * w + b. The views stay ATen calls; the rest fuses with what comes
// before and after it, a convolution's activation.
bool batch_norm_eval(Graph& graph, Node* n, bool no_training_op) {
  const size_t eps_at = no_training_op ? 6 : 7;
  if (n->args().size() != eps_at + 1 || !n->args()[0].is_node() || !n->args()[eps_at].is<double>())
    return false;
  if (!no_training_op && (!n->args()[5].is<bool>() || n->args()[5].get<bool>())) return false;
  const passes::TensorMetadata* m = tensor_meta(*n->args()[0].node());
  if (!m || !fusable_type(m->dtype) || m->shape.size() < 2) return false;
  const int64_t channels = m->shape[1];
  auto per_channel = [&](const Argument& a) {
    if (!a.is_node()) return false;
    const passes::TensorMetadata* v = tensor_meta(*a.node());
    return v && v->dtype == m->dtype && v->shape == std::vector<int64_t>{channels};
  };
  for (int i : {1, 2})
    if (!n->args()[i].is_none() && !per_channel(n->args()[i])) return false;
  if (!per_channel(n->args()[3]) || !per_channel(n->args()[4])) return false;
  std::vector<Node*> outputs, unused;
  if (!first_result_only(*n, outputs, unused)) return false;
  Emitter e(graph, n);
  passes::TensorMetadata column = *m;
  column.shape.assign(m->shape.size() - 1, 1);
  column.shape[0] = channels;
  column = contiguous(std::move(column));
  List shape;
  for (int64_t d : column.shape) shape.items.emplace_back(d);
  auto view = [&](const Argument& v) { return e.call("torch.ops.aten.view.default", {v, shape}, column); };
  // Laid out as ATen lays out the result: as x where x is dense (a
  // channels_last convolution's output), else contiguous.
  const passes::TensorMetadata full = dense_order(m->shape, m->stride) ? *m : contiguous(*m);
  Node* d = e.call("torch.ops.aten.sub.Tensor", {n->args()[0], view(n->args()[3])}, full);
  Node* rstd =
      e.call("torch.ops.aten.rsqrt.default",
             {e.call("torch.ops.aten.add.Scalar", {view(n->args()[4]), n->args()[eps_at]}, column)}, column);
  Node* y = e.call("torch.ops.aten.mul.Tensor", {d, rstd}, full);
  if (n->args()[1].is_node()) y = e.call("torch.ops.aten.mul.Tensor", {y, view(n->args()[1])}, full);
  if (n->args()[2].is_node()) y = e.call("torch.ops.aten.add.Tensor", {y, view(n->args()[2])}, full);
  replace_first_result(graph, n, y, outputs, unused);
  return true;
}

// nll_loss_forward(_log_softmax(x, -1, False), t, weight, reduction,
// ignore_index) over [N, C] logits whose log-probabilities nothing else
// reads, and whose total_weight nobody reads (cross_entropy's forward).
// Row i's loss is logsumexp(x[i]) - x[i, t[i]] (times weight[t[i]]), 0 where t[i] is
// ignore_index: a row kernel reads the logits once (max, sum of exp, log,
// the loss) and the [N, C] log-probabilities are never written; ATen
// gathers the N picked logits and sums the N losses. The mean divides by
// ATen's total_weight: the number of rows counted, or the sum of their
// labels' weights.
bool log_softmax_nll_loss(Graph& graph, Node* n) {
  const Args& a = n->args();
  if (a.size() != 5 || !a[0].is_node() || !a[1].is_node() || !a[3].is<int64_t>() || !a[4].is<int64_t>() ||
      !n->kwargs().empty())
    return false;
  Node* log_softmax = a[0].node();
  const Args& l = log_softmax->args();
  if (log_softmax->target() != "torch.ops.aten._log_softmax.default" || log_softmax->num_users() != 1 ||
      l.size() != 3 || !l[2].is<bool>() || l[2].get<bool>())
    return false;
  const passes::TensorMetadata* m = last_dim_float(l[0], l[1]);
  const passes::TensorMetadata* t = tensor_meta(*a[1].node());
  if (!m || m->shape.size() != 2 || !t || t->dtype != c10::kLong || t->shape.size() != 1 ||
      t->shape[0] != m->shape[0])
    return false;
  if (!a[2].is_none()) {  // class weights: [C], of the logits' type
    const passes::TensorMetadata* w = a[2].is_node() ? tensor_meta(*a[2].node()) : nullptr;
    if (!w || w->dtype != m->dtype || w->shape != std::vector<int64_t>{m->shape[1]}) return false;
  }
  const int64_t reduction = a[3].get<int64_t>(), ignore_index = a[4].get<int64_t>();
  if (reduction < 0 || reduction > 2) return false;  // none, mean, sum
  std::vector<Node*> outputs, unused;
  if (!first_result_only(*n, outputs, unused)) return false;
  Emitter e(graph, n);
  const int64_t rows = m->shape[0];
  // The metadata of a contiguous value of `shape` and `dtype`.
  auto like = [&](std::vector<int64_t> shape, c10::ScalarType dtype) {
    passes::TensorMetadata r = *m;
    r.shape = std::move(shape);
    r.dtype = dtype;
    return contiguous(std::move(r));
  };
  const passes::TensorMetadata full = contiguous(*m), row = per_row(*m), per_label = like({rows}, m->dtype),
                               scalar = like({}, m->dtype);
  Node* x = l[0].node();
  Node* target = a[1].node();
  const List column{{Argument(rows), Argument(int64_t{1})}};
  Node* max = e.call("torch.ops.aten.amax.default", {x, kLastDim, true}, row);
  Node* shifted = e.call("torch.ops.aten.sub.Tensor", {x, max}, full);
  Node* sum = e.call("torch.ops.aten.sum.dim_IntList",
                     {e.call("torch.ops.aten.exp.default", {shifted}, full), kLastDim, true}, row);
  Node* logsumexp =
      e.call("torch.ops.aten.add.Tensor", {e.call("torch.ops.aten.log.default", {sum}, row), max}, row);
  // An ignored row's label is not an index: it reads column 0 instead.
  Node* counted = e.call("torch.ops.aten.ne.Scalar", {target, ignore_index}, like({rows}, c10::kBool));
  Node* label =
      e.call("torch.ops.aten.where.ScalarOther", {counted, target, int64_t{0}}, like({rows}, c10::kLong));
  Node* picked = e.call(
      "torch.ops.aten.gather.default",
      {x, int64_t{1}, e.call("torch.ops.aten.view.default", {label, column}, like({rows, 1}, c10::kLong))},
      row);
  Node* counted_column =
      e.call("torch.ops.aten.view.default", {counted, column}, like({rows, 1}, c10::kBool));
  Node* loss = e.call("torch.ops.aten.sub.Tensor", {logsumexp, picked}, row);
  // With class weights, row i's loss and its share of the mean's
  // denominator are weight[t[i]].
  Node* weight = nullptr;
  if (a[2].is_node()) {
    weight = e.call(
        "torch.ops.aten.view.default",
        {e.call("torch.ops.aten.index_select.default", {a[2], int64_t{0}, label}, per_label), column}, row);
    loss = e.call("torch.ops.aten.mul.Tensor", {loss, weight}, row);
  }
  loss = e.call("torch.ops.aten.where.ScalarOther", {counted_column, loss, 0.0}, row);
  Node* y = nullptr;
  if (reduction == 0) {
    y = e.call("torch.ops.aten.view.default", {loss, List{{Argument(rows)}}}, per_label);
  } else {
    y = e.call("torch.ops.aten.sum.default", {loss}, scalar);
    if (reduction == 1) {
      Node* total =
          weight ? e.call("torch.ops.aten.sum.default",
                          {e.call("torch.ops.aten.where.ScalarOther", {counted_column, weight, 0.0}, row)},
                          scalar)
                 : e.call("torch.ops.aten.sum.default", {counted}, like({}, c10::kLong));
      y = e.call("torch.ops.aten.div.Tensor", {y, total}, scalar);
    }
  }
  replace_first_result(graph, n, y, outputs, unused);
  graph.erase_node(log_softmax);
  return true;
}

// sum, mean, amax or amin over the last dimension without keepdim, of a
// value the lowering fuses: the reduction with keepdim, then a view without
// the last dimension, so that the reduction joins the row kernel of what it
// reduces ((x * x).mean(-1) is one kernel and a view).
bool reduction_without_keepdim(Graph& graph, Node* n) {
  const Args& args = n->args();
  if (args.size() < 2 || args.size() > 3 || !args[1].is<List>() || args[1].get<List>().items.size() != 1)
    return false;
  if (args.size() == 3 && (!args[2].is<bool>() || args[2].get<bool>())) return false;
  for (const auto& [key, value] : n->kwargs())
    if (key != "dtype" || !value.is_none()) return false;
  const passes::TensorMetadata* m = last_dim_float(args[0], args[1].get<List>().items[0]);
  const passes::TensorMetadata* out = tensor_meta(*n);
  if (!m || !out || !lower(*args[0].node())) return false;
  Emitter e(graph, n);
  Node* kept = e.call(n->target().str().c_str(), {args[0], kLastDim, true}, per_row(*m));
  List shape;
  for (int64_t d : out->shape) shape.items.emplace_back(d);
  n->replace_all_uses_with(e.call("torch.ops.aten.view.default", {kept, shape}, contiguous(*out)));
  graph.erase_node(n);
  return true;
}

// sum, mean, amax or amin over several dimensions, the last among them, or
// over all of them (sum.default, mean.default), of a row-major value the
// lowering fuses: first over the last dimension with keepdim, in the row
// kernel of what it reduces, then over the rest by the same operator on
// those partial results, an ATen call (the mean of row means is the mean:
// the rows have one length). The kernel writes one value per row where it
// would have written the whole tensor for ATen to read again. Only where
// the rows are long enough for vector loads and many enough to share among
// threads: ATen's own reduction of a few long rows runs on all of them.
bool reduction_over_last_dims(Graph& graph, Node* n, const char* row_target) {
  constexpr int64_t kMinRows = 16, kMinRowLength = 16;
  const Args& args = n->args();
  if (args.empty() || args.size() > 3 || !args[0].is_node()) return false;
  for (const auto& [key, value] : n->kwargs())
    if (key != "dtype" || !value.is_none()) return false;
  Node* x = args[0].node();
  const passes::TensorMetadata* m = tensor_meta(*x);
  if (!m || !fusable_type(m->dtype) || m->shape.size() < 2 || m->stride != contiguous(*m).stride ||
      !lower(*x))
    return false;
  const int64_t rank = static_cast<int64_t>(m->shape.size()), length = m->shape.back();
  if (length < kMinRowLength || c10::multiply_integers(m->shape) / length < kMinRows) return false;
  // The dimensions it reduces: all of them for an empty or absent list.
  std::vector<bool> reduced(rank, true);
  if (args.size() >= 2 && !args[1].is_none()) {
    if (!args[1].is<List>()) return false;
    const auto& dims = args[1].get<List>().items;
    if (!dims.empty()) reduced.assign(rank, false);
    for (const Argument& d : dims) {
      if (!d.is<int64_t>()) return false;
      const int64_t k = d.get<int64_t>() < 0 ? d.get<int64_t>() + rank : d.get<int64_t>();
      if (k < 0 || k >= rank) return false;
      reduced[k] = true;
    }
  }
  // Over the last dimension alone it is a row kernel's reduction already.
  if (!reduced.back() || std::count(reduced.begin(), reduced.end(), true) < 2) return false;
  Emitter e(graph, n);
  n->replace_input_with(x, e.call(row_target, {x, kLastDim, true}, per_row(*m)));
  return true;
}

}  // namespace

size_t decompose(Graph& graph) {
  const Target addmm("torch.ops.aten.addmm.default");
  const Target mm("torch.ops.aten.mm.default"), add("torch.ops.aten.add.Tensor");
  size_t rewritten = 0;
  for (Node* n : graph.find_nodes(Op::call_function, addmm)) {
    // addmm(bias, x, w, *, beta=1, alpha=1) = bias + x @ w; other scalars
    // stay one call.
    if (n->args().size() != 3 || !is_one(*n, "beta") || !is_one(*n, "alpha")) continue;
    // Only where the sum fuses with its user: alone, addmm adds the bias
    // inside the BLAS call for free.
    const passes::TensorMetadata* meta = tensor_meta(*n);
    if (!meta || n->num_users() != 1 || !lower(**n->users().begin())) continue;
    Node* product;
    Node* sum;
    {
      auto at = graph.inserting_before(n);
      product = graph.call_function(mm, {n->args()[1], n->args()[2]});
      sum = graph.call_function(add, {product, n->args()[0]});
    }
    product->meta().set("tensor_meta", *meta);  // contiguous, as addmm's result
    sum->meta().set("tensor_meta", *meta);
    n->replace_all_uses_with(sum);
    graph.erase_node(n);
    ++rewritten;
  }
  for (const char* maker : {"torch.ops.aten.fill.Scalar", "torch.ops.aten.ones_like.default",
                            "torch.ops.aten.zeros_like.default", "torch.ops.aten.full_like.default"})
    for (Node* n : graph.find_nodes(Op::call_function, Target(maker))) rewritten += constant_tensor(graph, n);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.nll_loss_forward.default")))
    rewritten += log_softmax_nll_loss(graph, n);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten._softmax.default")))
    rewritten += softmax(graph, n, false);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten._log_softmax.default")))
    rewritten += softmax(graph, n, true);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten._softmax_backward_data.default")))
    rewritten += softmax_backward(graph, n, false);
  for (Node* n :
       graph.find_nodes(Op::call_function, Target("torch.ops.aten._log_softmax_backward_data.default")))
    rewritten += softmax_backward(graph, n, true);
  for (const char* reduction : {"torch.ops.aten.sum.dim_IntList", "torch.ops.aten.mean.dim",
                                "torch.ops.aten.amax.default", "torch.ops.aten.amin.default"})
    for (Node* n : graph.find_nodes(Op::call_function, Target(reduction)))
      rewritten += reduction_without_keepdim(graph, n) || reduction_over_last_dims(graph, n, reduction);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.sum.default")))
    rewritten += reduction_over_last_dims(graph, n, "torch.ops.aten.sum.dim_IntList");
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.mean.default")))
    rewritten += reduction_over_last_dims(graph, n, "torch.ops.aten.mean.dim");
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.native_layer_norm.default")))
    rewritten += layer_norm(graph, n);
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.native_batch_norm.default")))
    rewritten += batch_norm_eval(graph, n, false);
  for (Node* n : graph.find_nodes(Op::call_function,
                                  Target("torch.ops.aten._native_batch_norm_legit_no_training.default")))
    rewritten += batch_norm_eval(graph, n, true);
  return rewritten;
}

}  // namespace fx::compile_detail
