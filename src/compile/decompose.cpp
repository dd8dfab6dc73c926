// Phase 1 of fx::compile: operators rewritten into the ones the lowering
// fuses. Inductor's decomposition table does much more (gelu, softmax,
// layer_norm, batch_norm in eval); here only what keeps an extern call from
// hiding pointwise work: addmm's bias.
#include "phases.h"

namespace fx::compile_detail {

namespace {

bool is_one(const Node& n, const char* key) {
  const Argument* a = n.kwarg(key);
  if (!a) return true;
  if (a->is<int64_t>()) return a->get<int64_t>() == 1;
  if (a->is<double>()) return a->get<double>() == 1.0;
  return false;
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
  return rewritten;
}

}  // namespace fx::compile_detail
