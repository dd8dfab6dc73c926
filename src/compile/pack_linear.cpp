// Matrix products with a weight through MKL's packed GEMM, as Inductor's
// freezing does on CPU: `mm(x, t(w))` becomes
//
//   packed = torch.ops.mkl._mkl_reorder_linear_weight.default(w, M)
//   mm = torch.ops.mkl._mkl_linear.default(x, packed, w, None, M)
//
// `packed` is a value of the weights alone, which cache_weight_computations
// then keeps (and packs again when the weight changes), so the reorder runs
// once. MKL's packed sgemm skips the per-call packing of the weight that a
// plain sgemm does; for the row counts of a transformer at batch 1 to 8
// (M = 8 to 200 rows of 768 to 3072) it took 1.2x to 2.5x less time on this
// project's 2-core machine. At M = 1 it was slower (a matrix-vector
// product), so M must be at least 2. `_mkl_linear` serves any M: at another
// row count it runs the plain product on `w`.
#include "phases.h"

#include <fx/graph.h>
#include <fx/graph_module.h>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace fx::compile_detail {

namespace {

constexpr const char* kReorder = "torch.ops.mkl._mkl_reorder_linear_weight.default";
constexpr const char* kLinear = "torch.ops.mkl._mkl_linear.default";

bool mkl_ops_available() {
  static const bool available = [] {
    if (!at::hasMKL()) return false;
    auto& d = c10::Dispatcher::singleton();
    for (const char* name : {"mkl::_mkl_reorder_linear_weight", "mkl::_mkl_linear"}) {
      auto op = d.findSchema({name, ""});
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) return false;
    }
    return true;
  }();
  return available;
}

bool is_float_matrix(const passes::TensorMetadata* m) {
  return m && m->dtype == c10::kFloat && m->shape.size() == 2;
}

// The weight `w` of `t(w)` (or `permute(w, [1, 0])`): a float32 [N, K]
// tensor attribute of the CPU, row-major. nullptr otherwise.
Node* transposed_weight(const GraphModule& gm, const Node& wt) {
  if (wt.op() != Op::call_function || wt.args().empty() || !wt.args()[0].is_node()) return nullptr;
  const std::string& target = wt.target().str();
  const bool t = target == "torch.ops.aten.t.default" && wt.args().size() == 1;
  const bool permute = target == "torch.ops.aten.permute.default" && wt.args().size() == 2 &&
                       wt.args()[1] == Argument(List{{int64_t{1}, int64_t{0}}});
  Node* w = wt.args()[0].node();
  if ((!t && !permute) || w->op() != Op::get_attr) return nullptr;
  const passes::TensorMetadata* m = tensor_meta(*w);
  if (!is_float_matrix(m) || m->stride != std::vector<int64_t>{m->shape[1], 1}) return nullptr;
  return gm.get_tensor(w->target().str()).device().is_cpu() ? w : nullptr;
}

}  // namespace

size_t pack_linear_weights(GraphModule& gm) {
  if (!mkl_ops_available()) return 0;
  Graph& graph = gm.graph();
  const Target mm("torch.ops.aten.mm.default"), addmm("torch.ops.aten.addmm.default");
  // One packing per weight and row count, however many products read it.
  std::unordered_map<const Node*, std::unordered_map<int64_t, Node*>> packed;
  size_t rewritten = 0;
  std::vector<Node*> products = graph.find_nodes(Op::call_function, mm);
  for (Node* n : graph.find_nodes(Op::call_function, addmm)) products.push_back(n);
  for (Node* n : products) {
    const bool with_bias = n->target() == addmm;
    // addmm with beta or alpha other than 1 stays as it is.
    if (n->args().size() != (with_bias ? 3u : 2u) || !n->kwargs().empty()) continue;
    const Argument& x = n->args()[with_bias ? 1 : 0];
    const Argument& wt = n->args()[with_bias ? 2 : 1];
    if (!x.is_node() || !wt.is_node()) continue;
    // The product's [M, N] (x may be a kernel's output, which has no meta).
    const passes::TensorMetadata* out = tensor_meta(*n);
    Node* w = transposed_weight(gm, *wt.node());
    if (!w || !is_float_matrix(out) || out->shape[0] < 2) continue;
    if (with_bias) {
      // _mkl_linear copies a bias of N numbers into each row.
      const Argument& b = n->args()[0];
      const passes::TensorMetadata* bm = b.is_node() ? tensor_meta(*b.node()) : nullptr;
      if (!bm || bm->dtype != c10::kFloat || bm->shape != std::vector<int64_t>{tensor_meta(*w)->shape[0]})
        continue;
    }
    const int64_t rows = out->shape[0];
    Node*& pack = packed[w][rows];
    if (!pack) {
      auto at = graph.inserting_after(w);
      pack = graph.call_function(kReorder, {w, rows});
    }
    Node* linear;
    {
      auto at = graph.inserting_before(n);
      linear =
          graph.call_function(kLinear, {x, pack, w, with_bias ? n->args()[0] : Argument(NoneType{}), rows});
    }
    linear->meta() = n->meta();
    n->replace_all_uses_with(linear);
    Node* transpose = wt.node();
    graph.erase_node(n);
    if (transpose->num_users() == 0) graph.erase_node(transpose);
    ++rewritten;
  }
  return rewritten;
}

void unpack_linear_weights(Graph& graph) {
  for (Node* n : graph.find_nodes(Op::call_function, Target(kLinear))) {
    const Argument& bias = n->args()[3];
    Node* product;
    {
      auto at = graph.inserting_before(n);
      Node* wt = graph.call_function("torch.ops.aten.t.default", {n->args()[2]});
      product = bias.is<NoneType>()
                    ? graph.call_function("torch.ops.aten.mm.default", {n->args()[0], wt})
                    : graph.call_function("torch.ops.aten.addmm.default", {bias, n->args()[0], wt});
    }
    product->meta() = n->meta();
    n->replace_all_uses_with(product);
    Node* pack = n->args()[1].node();
    graph.erase_node(n);
    if (pack && pack->num_users() == 0) graph.erase_node(pack);
  }
}

}  // namespace fx::compile_detail
