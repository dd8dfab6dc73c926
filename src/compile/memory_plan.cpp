// Memory planning of fx::compile, on the graph a specialization runs: which
// kernel writes into a buffer that dies as it is read, and where values
// computed from the weights alone run. Together they keep a call's peak
// memory at or below eager's (bench/compile_models_bench: resnet50 at batch
// 1 held 13.4 MB at its peak against eager's 11.8 before, 11.8 after).
#include "phases.h"

#include <fx/graph.h>

#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace fx::compile_detail {

// Marks the kernel node `call` to write its first output into an input's
// buffer (reuse_input=i), as eager's in-place `out += identity; relu_(out)`
// does and Inductor's buffer reuse: an input of the kernel's shape, laid out
// as the output, read by this node alone, and made fresh by a node that
// always allocates its result (a kernel, a convolution, a matrix product),
// so that no one else can hold its buffer. The kernel checks at each call
// that the buffer is still the input's alone (KernelCall::owns_its_buffer).
void mark_reuse(Node& call, const Kernel& k, const KernelForm& form) {
  static const std::set<std::string> fresh = {"torch.ops.aten.convolution.default",
                                              "torch.ops.aten.mm.default", "torch.ops.aten.addmm.default",
                                              "torch.ops.aten.bmm.default"};
  if (form.loop == Loop::rows || form.full_outputs.empty() || !form.full_outputs[0]) return;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const Argument& a = call.args()[i];
    if (!a.is_node()) continue;
    const Node& in = *a.node();
    const std::string& target = in.target().str();
    if (in.op() != Op::call_function || in.num_users() != 1 ||
        (!fresh.count(target) && target.rfind("fxcpp.compiled.", 0) != 0))
      continue;
    const passes::TensorMetadata* m = tensor_meta(*k.inputs[i]);
    if (!m || m->shape != k.shape || dense_order(m->shape, m->stride) != k.order ||
        m->dtype != tensor_meta(*k.outputs[0])->dtype)
      continue;
    call.update_kwarg("reuse_input", static_cast<int64_t>(i));
    return;
  }
}

void sink_weight_computations(Graph& graph) {
  // A pure call whose inputs are all weights or values computed from them.
  std::unordered_set<const Node*> from_weights;
  std::vector<Node*> order;
  for (Node* n : graph.nodes()) {
    order.push_back(n);
    if (n->op() == Op::get_attr) {
      from_weights.insert(n);
      continue;
    }
    if (n->op() != Op::call_function || n->is_impure()) continue;
    const std::vector<Node*> inputs = n->all_input_nodes();
    bool weights_only = !inputs.empty();
    for (Node* in : inputs) weights_only = weights_only && from_weights.count(in);
    if (weights_only) from_weights.insert(n);
  }
  // Last first, so that a chain moves as one: each before its first reader,
  // then its inputs before it.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!from_weights.count(n) || n->num_users() == 0) continue;
    Node* first = nullptr;
    for (Node* user : n->users())
      if (!first || user->is_before(first)) first = user;
    first->prepend(n);
  }
}

}  // namespace fx::compile_detail
