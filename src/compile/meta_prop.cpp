// Propagating tensor_meta without running the graph: ShapeProp on meta
// tensors. Every input and attribute stands as a tensor of its sizes,
// strides and dtype with no data, and each operator runs its meta kernel
// (its shape function), so that a pass which changed layouts learns the new
// ones at the dispatcher's cost instead of a forward's: a real ShapeProp
// took 570 ms of resnet50's compile at batch 8.
//
// A few operators of convolutional networks have no meta kernel in
// LibTorch's C++ (torch registers theirs in Python, in
// torch/_meta_registrations.py): their results are made here as the CPU
// kernels lay them out. Any other operator that cannot run on meta tensors
// (one without a meta kernel, a branch's predicate that needs data) makes
// the whole propagation run for real instead.
#include "phases.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/neg.h>

#include <stdexcept>

namespace fx::compile_detail {

namespace {

// A tensor of the same sizes, strides and dtype with no data.
Value on_meta(Value v) {
  if (v.has_proxy() || v.is_sequence()) return v;
  c10::IValue iv = v.ivalue();
  if (!iv.isTensor()) return v;
  const at::Tensor& t = iv.toTensor();
  return Value(at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)));
}

std::vector<int64_t> ints(const Value& v, size_t n) {
  std::vector<int64_t> out;
  for (const Value& item : v.items()) out.push_back(item.to_int());
  if (out.size() == 1) out.resize(n, out[0]);  // one number for every spatial dimension
  if (out.size() != n) throw std::runtime_error("convolution: a parameter list of the wrong length");
  return out;
}

const Target kMetaConvolution("torch.ops.aten.convolution.default");
const Target kMetaAdaptiveAvgPool2d("torch.ops.aten._adaptive_avg_pool2d.default");
const Target kMetaBatchNormNoTraining("torch.ops.aten._native_batch_norm_legit_no_training.default");
const Target kMetaNativeBatchNorm("torch.ops.aten.native_batch_norm.default");

// A 4-d result of `sizes`, channels_last where ATen's CPU kernel makes it
// so: when its input (or, for a convolution, its weight) suggests it.
at::Tensor image_like(const at::Tensor& input, std::vector<int64_t> sizes, bool channels_last) {
  return at::empty(sizes, input.options().memory_format(channels_last ? c10::MemoryFormat::ChannelsLast
                                                                      : c10::MemoryFormat::Contiguous));
}

bool suggests_channels_last(const at::Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == c10::MemoryFormat::ChannelsLast;
}

// aten.convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups), 2-d: oneDNN's and the slow path's
// result is channels_last when the input or the weight is (ATen's
// determine_backend_memory_format).
Value convolution(const std::vector<Value>& args) {
  if (args.size() != 9) throw std::runtime_error("convolution: not the 9 arguments of its schema");
  const at::Tensor input = args[0].tensor(), weight = args[1].tensor();
  if (input.dim() != 4 || weight.dim() != 4) throw std::runtime_error("convolution: not 2-d");
  const std::vector<int64_t> stride = ints(args[3], 2), padding = ints(args[4], 2),
                             dilation = ints(args[5], 2), output_padding = ints(args[7], 2);
  const bool transposed = args[6].to_int() != 0;
  const int64_t groups = args[8].to_int();
  std::vector<int64_t> sizes{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 0; d < 2; ++d) {
    const int64_t in = input.size(d + 2), k = dilation[d] * (weight.size(d + 2) - 1) + 1;
    sizes.push_back(transposed ? (in - 1) * stride[d] - 2 * padding[d] + k + output_padding[d]
                               : (in + 2 * padding[d] - k) / stride[d] + 1);
  }
  return Value(image_like(input, sizes, suggests_channels_last(input) || suggests_channels_last(weight)));
}

// native_batch_norm and its eval form: the output laid out as the input
// suggests, and the saved mean and inverse deviation, one per channel in
// training, empty in eval.
Value batch_norm(const at::Tensor& input, bool training) {
  if (!fusable_type(input.scalar_type()) || input.dim() < 2)
    throw std::runtime_error("batch_norm: statistics of another type");  // half types keep float ones
  at::Tensor out = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  const int64_t statistics = training ? input.size(1) : 0;
  return Value::tuple({Value(out), Value(at::empty({statistics}, input.options())),
                       Value(at::empty({statistics}, input.options()))});
}

class MetaShapeProp : public passes::ShapeProp {
 public:
  using passes::ShapeProp::ShapeProp;
  Value placeholder(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    return on_meta(passes::ShapeProp::placeholder(target, args, kwargs));
  }
  Value get_attr(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    return on_meta(passes::ShapeProp::get_attr(target, args, kwargs));
  }
  Value call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs) override {
    if (target == kMetaConvolution) return convolution(args);
    if (target == kMetaAdaptiveAvgPool2d && args.size() == 2) {
      // adaptive_avg_pool2d(input, output_size): the input's layout.
      const at::Tensor input = args[0].tensor();
      const std::vector<int64_t> size = ints(args[1], 2);
      if (input.dim() != 4) throw std::runtime_error("_adaptive_avg_pool2d: not 4-d");
      return Value(
          image_like(input, {input.size(0), input.size(1), size[0], size[1]}, suggests_channels_last(input)));
    }
    if (target == kMetaBatchNormNoTraining && args.size() == 7) return batch_norm(args[0].tensor(), false);
    if (target == kMetaNativeBatchNorm && args.size() == 8)
      return batch_norm(args[0].tensor(), args[5].to_int());
    try {
      return passes::ShapeProp::call_function(target, args, kwargs);
    } catch (const std::exception&) {
      if (auto v = pointwise_without_meta_kernel(target, args, kwargs)) return *v;
      throw;
    }
  }
  Value run_node(Node* n) override {
    node_ = n;
    return passes::ShapeProp::run_node(n);
  }

 private:
  // A pointwise operator of one tensor with no meta kernel (relu, hardtanh:
  // ATen's CPU kernels run them through TensorIterator): the result is laid
  // out as another such operator's meta kernel lays it out (neg's), with
  // the sizes and dtype it had before, which a change of layouts keeps.
  // Nothing for any other operator.
  std::optional<Value> pointwise_without_meta_kernel(const Target& target, const std::vector<Value>& args,
                                                     const ValueKwargs& kwargs) {
    const c10::OperatorHandle* op = target.operator_handle();
    const passes::TensorMetadata* before = tensor_meta(*node_);
    std::optional<at::Tensor> input;
    size_t tensors = 0;
    auto count = [&](const Value& v) {
      if (v.has_proxy() || v.is_sequence()) return;
      if (c10::IValue iv = v.ivalue(); iv.isTensor()) {
        ++tensors;
        input = iv.toTensor();
      }
    };
    for (const Value& v : args) count(v);
    for (const auto& [key, v] : kwargs) count(v);
    if (!op || !op->hasTag(at::Tag::pointwise) || tensors != 1 || !before ||
        input->scalar_type() == at::kBool)
      return std::nullopt;
    const at::Tensor like = at::neg(*input);
    if (like.sizes() != c10::IntArrayRef(before->shape)) return std::nullopt;
    return Value(at::empty_strided(before->shape, like.strides(), like.options().dtype(before->dtype)));
  }

  const Node* node_ = nullptr;
};

}  // namespace

void propagate_tensor_meta(GraphModule& gm, const std::vector<Value>& inputs) {
  try {
    MetaShapeProp(gm).propagate(inputs);
    return;
  } catch (const std::exception&) {
  }
  passes::ShapeProp(gm).propagate(inputs);
}

}  // namespace fx::compile_detail
