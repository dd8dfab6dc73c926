// Phase 1 of fx::compile, before decompose: convolutions read channels_last.
// oneDNN's convolutions run faster on channels_last (NHWC) tensors than on
// row-major (NCHW) ones on the CPU: torchvision's resnet50 at batch 8 took
// 470 ms against 610 in eager PyTorch on the 2-core machine of
// docs/benchmarks.md, mobilenet_v2 107 against 160. Inductor's layout
// optimization makes the same choice. In a graph of two or more 2-d
// float32 convolutions, the input of each that is row-major is copied to
// channels_last once; the convolution's result is then channels_last, the
// kernels after it keep that layout (order_loops) and so do ATen's pooling
// and pointwise calls, so the next convolution reads channels_last with no
// copy. Each weight is copied to channels_last too, where ATen would copy it
// on every call: a weight read through get_attr is copied once and kept
// (weight_cache.cpp) while it does not change, so only the weights copied on
// every call (graph inputs, or all of them in a training step, whose
// optimizer changes them) count against the images below. A graph output
// whose layout this changed is copied back to the layout eager gives it,
// and so is the input of a view that cannot view it as it is now laid out
// (a flatten of a channels_last image: the view becomes a reshape, which
// copies, as Inductor's view of such a layout does).
#include "phases.h"

#include <ATen/TensorUtils.h>
#include <c10/util/accumulate.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fx::compile_detail {

namespace {

const Target kConvolution("torch.ops.aten.convolution.default");
const Target kClone("torch.ops.aten.clone.default");
const Target kView("torch.ops.aten.view.default");
const Target kReshape("torch.ops.aten.reshape.default");

bool row_major_image(const Node& x) {
  const passes::TensorMetadata* m = tensor_meta(x);
  return m->memory_format == c10::MemoryFormat::Contiguous && m->shape[1] > 1;
}

}  // namespace

size_t channels_last_convolutions(GraphModule& gm, const std::vector<Value>& inputs, bool weights_kept) {
  Graph& graph = gm.graph();
  // One convolution alone would pay for the copies in and out and gain
  // one convolution's difference: only a network of them is worth it.
  std::vector<Node*> convolutions;
  int64_t images = 0, weights = 0;
  for (Node* conv : graph.find_nodes(Op::call_function, kConvolution)) {
    const Args& args = conv->args();
    if (args.size() < 2 || !args[0].is_node() || !args[1].is_node()) continue;
    const passes::TensorMetadata* x = tensor_meta(*args[0].node());
    const passes::TensorMetadata* w = tensor_meta(*args[1].node());
    if (!x || !w || x->dtype != c10::kFloat || x->shape.size() != 4 || w->shape.size() != 4) continue;
    convolutions.push_back(conv);
    images += c10::multiply_integers(x->shape);
    if (!weights_kept || args[1].node()->op() != Op::get_attr) weights += c10::multiply_integers(w->shape);
  }
  // A weight copied on every call costs what the copy of an image does:
  // where such weights outweigh the images, as in a training step of
  // resnet50 at batch 1 (10.7M input elements, 23.5M weights: 15 % slower),
  // row-major is faster; at batch 8 (85M) channels_last is 1.46x faster,
  // as is mobilenet_v2 at batch 1 (6.8M against 2.2M).
  if (convolutions.size() < 2 || images < weights) return 0;
  // A value read by several convolutions is copied once. The maps find a
  // copy; the lists hold them in the order they were made, which is the order
  // in which they are visited below (a map's order is its pointers').
  std::unordered_map<Node*, Node*> copy_of, weight_copy_of;
  std::vector<std::pair<Node*, Node*>> copies, weight_copies;
  for (Node* conv : convolutions) {
    Node* w = conv->args()[1].node();
    if (tensor_meta(*w)->memory_format != c10::MemoryFormat::ChannelsLast) {
      Node*& copy = weight_copy_of[w];
      if (!copy) {
        auto at = graph.inserting_before(conv);
        copy = graph.call_function(kClone, {w}, {{"memory_format", c10::MemoryFormat::ChannelsLast}});
        weight_copies.emplace_back(w, copy);
      }
      conv->replace_input_with(w, copy);
    }
    if (!row_major_image(*conv->args()[0].node())) continue;
    Node* x = conv->args()[0].node();
    Node*& copy = copy_of[x];
    if (!copy) {
      auto at = graph.inserting_before(conv);  // the first convolution that reads x
      copy = graph.call_function(kClone, {x}, {{"memory_format", c10::MemoryFormat::ChannelsLast}});
      copies.emplace_back(x, copy);
    }
    conv->replace_input_with(x, copy);
  }
  if (copies.empty() && weight_copies.empty()) return 0;

  // The outputs' layouts before, to restore them after.
  Node* output = graph.output_node();
  std::vector<std::pair<Node*, passes::TensorMetadata>> before;
  for (Node* out : output->all_input_nodes())
    if (const passes::TensorMetadata* m = tensor_meta(*out)) before.emplace_back(out, *m);
  // A view of a value whose layout may change here (one computed from a
  // copy: a convolution's result is channels_last when its input or its
  // weight is) is a reshape while the layouts are found, and a view again
  // where it can view the value as laid out now.
  std::unordered_set<const Node*> moved;
  for (const auto& [x, copy] : copies) moved.insert(copy);
  for (const auto& [w, copy] : weight_copies) moved.insert(copy);
  std::vector<Node*> views;
  for (Node* n : graph.nodes()) {
    if (moved.count(n)) continue;
    bool reads_moved = false;
    for (const Node* in : n->all_input_nodes()) reads_moved = reads_moved || moved.count(in);
    if (!reads_moved) continue;
    moved.insert(n);
    if (n->op() == Op::call_function && n->target() == kView && n->args().size() == 2 &&
        n->kwargs().empty()) {
      n->set_target(kReshape);
      views.push_back(n);
    }
  }
  propagate_tensor_meta(gm, inputs);
  for (Node* n : views) {
    const passes::TensorMetadata* x = tensor_meta(*n->args()[0].node());
    const passes::TensorMetadata* out = tensor_meta(*n);
    if (x && out && at::detail::computeStride(x->shape, x->stride, out->shape)) n->set_target(kView);
  }
  // Before the propagation every input looked row-major; now a copy whose input
  // comes channels_last from an earlier convolution is known to be idle.
  size_t added = weight_copies.size();
  for (auto& [x, copy] : copies) {
    if (tensor_meta(*x)->memory_format != c10::MemoryFormat::ChannelsLast) {
      ++added;
      continue;
    }
    copy->replace_all_uses_with(x);
    graph.erase_node(copy);
  }
  for (const auto& [out, m] : before) {
    const passes::TensorMetadata* now = tensor_meta(*out);
    if (!now || now->stride == m.stride || !m.memory_format) continue;
    Node* back;
    {
      auto at = graph.inserting_before(output);
      back = graph.call_function(kClone, {out}, {{"memory_format", *m.memory_format}});
    }
    back->meta().set("tensor_meta", m);
    output->replace_input_with(out, back);
  }
  // The output node's own tensor_meta is that of the one value it returns,
  // as ShapeProp records it: the copy back's, where there is one.
  if (output->args().size() == 1 && output->args()[0].is_node())
    if (const passes::TensorMetadata* m = tensor_meta(*output->args()[0].node()))
      output->meta().set("tensor_meta", *m);
  return added;
}

}  // namespace fx::compile_detail
