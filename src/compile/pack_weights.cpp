// Weights packed once for the library that multiplies them, as Inductor's
// freezing does on CPU:
//
//   packed = torch.ops.mkl._mkl_reorder_linear_weight.default(w, M)
//   mm = torch.ops.mkl._mkl_linear.default(x, packed, w, None, M)
//
// for a product `mm(x, t(w))` (MKL's packed GEMM), and
//
//   packed = torch.ops.mkldnn._reorder_convolution_weight.default(
//       w, padding, stride, dilation, groups, x_size)
//   convolution = torch.ops.mkldnn._convolution_pointwise.default(
//       x, packed, b, padding, stride, dilation, groups, 'none', [], None)
//
// for a convolution (oneDNN's blocked weight layout). `packed` is a value of
// the weights alone, which cache_weight_computations then keeps (and packs
// again when the weight changes), so the packing runs once; the plain calls
// pack their weight operand on every call.
//
// Measured on this project's 2-core machine (median of 40-60 calls): MKL's
// packed sgemm took 1.2x to 2.5x less time at the row counts of a
// transformer at batch 1 to 8 (8 to 200 rows of 768 to 3072) and 0.93x at
// one row (a matrix-vector product), so a product needs 2 rows or more;
// `_mkl_linear` serves any row count (at another it runs the plain product
// on `w`). oneDNN's packed convolution took 1.1x to 2.3x less time where
// the weight outweighs the image (resnet50's 14x14 and 7x7 stages at batch
// 1) and the same elsewhere; it serves any input size, and its output is
// channels_last whatever its input's layout, so only a convolution the
// layout pass made channels_last is packed.
#include "phases.h"

#include <fx/error.h>
#include <fx/graph.h>
#include <fx/graph_module.h>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Contiguity.h>

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fx::compile_detail {

namespace {

constexpr const char* kReorderLinear = "torch.ops.mkl._mkl_reorder_linear_weight.default";
constexpr const char* kPackedLinear = "torch.ops.mkl._mkl_linear.default";
constexpr const char* kReorderConvolution = "torch.ops.mkldnn._reorder_convolution_weight.default";
constexpr const char* kPackedConvolution = "torch.ops.mkldnn._convolution_pointwise.default";

// Whether LibTorch has these operators with a CPU kernel (MKL and oneDNN
// are optional in a LibTorch build).
bool have_cpu_kernels(std::initializer_list<const char*> names) {
  auto& d = c10::Dispatcher::singleton();
  for (const char* name : names) {
    auto op = d.findSchema({name, ""});
    if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) return false;
  }
  return true;
}

bool is_float(const passes::TensorMetadata* m, size_t rank) {
  return m && m->dtype == c10::kFloat && m->shape.size() == rank;
}

// `w` when it is a float32 tensor attribute of the CPU of `rank`
// dimensions; nullptr otherwise. Not an inference tensor either: it has no
// version counter, so its packing would not be kept, and packing on every
// call costs more than it saves.
Node* cpu_weight(const GraphModule& gm, Node* w, size_t rank) {
  if (w->op() != Op::get_attr || !is_float(tensor_meta(*w), rank)) return nullptr;
  const at::Tensor t = gm.get_tensor(w->target().str());
  return t.device().is_cpu() && !t.is_inference() ? w : nullptr;
}

// The weight `w` of `t(w)` (or `permute(w, [1, 0])`), row-major [N, K].
Node* transposed_weight(const GraphModule& gm, const Node& wt) {
  if (wt.op() != Op::call_function || wt.args().empty() || !wt.args()[0].is_node()) return nullptr;
  const std::string& target = wt.target().str();
  const bool t = target == "torch.ops.aten.t.default" && wt.args().size() == 1;
  const bool permute = target == "torch.ops.aten.permute.default" && wt.args().size() == 2 &&
                       wt.args()[1] == Argument(List{{int64_t{1}, int64_t{0}}});
  Node* w = (t || permute) ? cpu_weight(gm, wt.args()[0].node(), 2) : nullptr;
  if (!w) return nullptr;
  const passes::TensorMetadata& m = *tensor_meta(*w);
  return m.stride == std::vector<int64_t>{m.shape[1], 1} ? w : nullptr;
}

// The weight a convolution reads: the attribute itself, or its copy to
// channels_last (layout.cpp), which packing makes needless.
Node* convolution_weight(const GraphModule& gm, const Argument& a) {
  if (!a.is_node()) return nullptr;
  Node* w = a.node();
  if (w->op() == Op::call_function && w->target().str() == "torch.ops.aten.clone.default" &&
      w->args().size() == 1 && w->args()[0].is_node())
    w = w->args()[0].node();
  return cpu_weight(gm, w, 4);
}

// Two integers (a convolution's stride, padding or dilation); empty otherwise.
std::vector<int64_t> int_pair(const Argument& a) {
  std::vector<int64_t> v;
  if (!a.is<List>() || a.get<List>().items.size() != 2) return v;
  for (const Argument& i : a.get<List>().items) {
    if (!i.is<int64_t>()) return {};
    v.push_back(i.get<int64_t>());
  }
  return v;
}

// Erases `n` and then its input `in` if nothing else reads it.
void erase_with_input(Graph& graph, Node* n, Node* in) {
  graph.erase_node(n);
  if (in && in->num_users() == 0) graph.erase_node(in);
}

size_t pack_products(GraphModule& gm) {
  static const bool available =
      at::hasMKL() && have_cpu_kernels({"mkl::_mkl_reorder_linear_weight", "mkl::_mkl_linear"});
  if (!available) return 0;
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
    if (!w || !is_float(out, 2) || out->shape[0] < 2) continue;
    if (with_bias) {
      // _mkl_linear copies a bias of N numbers into each row.
      const Argument& b = n->args()[0];
      const passes::TensorMetadata* bm = b.is_node() ? tensor_meta(*b.node()) : nullptr;
      if (!is_float(bm, 1) || bm->shape[0] != out->shape[1]) continue;
    }
    const int64_t rows = out->shape[0];
    Node*& pack = packed[w][rows];
    if (!pack) {
      auto at = graph.inserting_after(w);
      pack = graph.call_function(kReorderLinear, {w, rows});
    }
    Node* linear;
    {
      auto at = graph.inserting_before(n);
      linear = graph.call_function(kPackedLinear,
                                   {x, pack, w, with_bias ? n->args()[0] : Argument(NoneType{}), rows});
    }
    linear->meta() = n->meta();
    n->replace_all_uses_with(linear);
    erase_with_input(graph, n, wt.node());
    ++rewritten;
  }
  return rewritten;
}

size_t pack_convolutions(GraphModule& gm) {
  static const bool available =
      have_cpu_kernels({"mkldnn::_reorder_convolution_weight", "mkldnn::_convolution_pointwise"});
  if (!available) return 0;
  Graph& graph = gm.graph();
  size_t rewritten = 0;
  for (Node* n : graph.find_nodes(Op::call_function, Target("torch.ops.aten.convolution.default"))) {
    // convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    const Args& a = n->args();
    if (a.size() != 9 || !n->kwargs().empty() || !a[0].is_node() || !(a[6] == Argument(false)) ||
        !a[8].is<int64_t>())
      continue;
    Node* w = convolution_weight(gm, a[1]);
    const passes::TensorMetadata* out = tensor_meta(*n);
    const std::vector<int64_t> stride = int_pair(a[3]), padding = int_pair(a[4]), dilation = int_pair(a[5]);
    // Only where the layout pass chose channels_last for the output: the
    // graph after it reads the output as laid out then, and a view of it
    // (a flatten) needs that layout.
    // (Tensor::is_contiguous(channels_last)'s test, which sets aside
    // dimensions of size 1, whose stride nothing reads: tensor_meta's
    // memory_format says contiguous first where both hold.)
    if (!w || !is_float(out, 4) ||
        !c10::_compute_channels_last_contiguous_2d<int64_t>(out->shape, out->stride) || stride.empty() ||
        padding.empty() || dilation.empty())
      continue;
    const Argument& b = a[2];
    if (!b.is<NoneType>() && !(b.is_node() && is_float(tensor_meta(*b.node()), 1))) continue;
    const int64_t groups = a[8].get<int64_t>();
    // The input's sizes pick oneDNN's weight layout: x's own, or (after a
    // kernel, whose node has no meta) the smallest input that gives this
    // output, which differs by less than a stride.
    const std::vector<int64_t>& ws = tensor_meta(*w)->shape;
    std::vector<int64_t> input_size;
    if (const passes::TensorMetadata* xm = tensor_meta(*a[0].node()); is_float(xm, 4)) {
      input_size = xm->shape;
    } else {
      input_size = {out->shape[0], ws[1] * groups};
      for (size_t d = 0; d < 2; ++d)
        input_size.push_back((out->shape[2 + d] - 1) * stride[d] - 2 * padding[d] +
                             dilation[d] * (ws[2 + d] - 1) + 1);
    }
    auto ints = [](const std::vector<int64_t>& v) {
      List l;
      for (int64_t i : v) l.items.emplace_back(i);
      return l;
    };
    Node* pack;
    {
      auto at = graph.inserting_after(w);
      pack = graph.call_function(kReorderConvolution,
                                 {w, ints(padding), ints(stride), ints(dilation), groups, ints(input_size)});
    }
    Node* convolution;
    {
      auto at = graph.inserting_before(n);
      convolution =
          graph.call_function(kPackedConvolution, {a[0], pack, b, ints(padding), ints(stride), ints(dilation),
                                                   groups, std::string("none"), List{}, NoneType{}});
    }
    convolution->meta() = n->meta();
    n->replace_all_uses_with(convolution);
    erase_with_input(graph, n, a[1].node() == w ? nullptr : a[1].node());
    ++rewritten;
  }
  return rewritten;
}

}  // namespace

size_t pack_weights(GraphModule& gm) { return pack_products(gm) + pack_convolutions(gm); }

void unpack_weights(Graph& graph) {
  for (Node* n : graph.find_nodes(Op::call_function, Target(kPackedLinear))) {
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
    erase_with_input(graph, n, n->args()[1].is_node() ? n->args()[1].node() : nullptr);
  }
  for (Node* n : graph.find_nodes(Op::call_function, Target(kPackedConvolution))) {
    // The weight is what the packing read.
    const Args& a = n->args();
    Node* pack = a[1].is_node() ? a[1].node() : nullptr;
    if (!pack || pack->target().str() != kReorderConvolution)
      throw Error("fx::compile: the packed convolution '" + n->name() + "' reads no packing of its weight");
    Node* convolution;
    {
      auto at = graph.inserting_before(n);
      convolution = graph.call_function(
          "torch.ops.aten.convolution.default",
          {a[0], pack->args()[0], a[2], a[4], a[3], a[5], false, List{{int64_t{0}, int64_t{0}}}, a[6]});
    }
    convolution->meta() = n->meta();
    n->replace_all_uses_with(convolution);
    erase_with_input(graph, n, pack);
  }
}

}  // namespace fx::compile_detail
