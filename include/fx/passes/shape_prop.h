#pragma once
// fx::passes::ShapeProp: runs a GraphModule node by node on example inputs
// and records, in each node's meta, what its value was (torch.fx's
// torch/fx/passes/shape_prop.py):
//
//   meta["tensor_meta"]  a TensorMetadata for a tensor value; for a tuple,
//                        list or dict holding tensors, a TensorMetadataTree
//                        of the same structure (FX's map_aggregate); nothing
//                        for a value without tensors.
//   meta["type"]         a std::string: Python's qualified name of the
//                        value's type, as FX's `type(result)` names it
//                        (`torch.Tensor`, `tuple`, `int`, `torch.Size`, ...).
//
//   auto gm = fx::symbolic_trace(model);
//   fx::passes::ShapeProp(*gm).propagate({torch::randn({1, 3, 224, 224})});
//   for (fx::Node* n : gm->graph().nodes())
//     if (auto* tm = n->meta().get<fx::passes::TensorMetadata>("tensor_meta"))
//       std::cout << n->name() << " " << tm->repr() << "\n";
//
// An error in a node is rethrown as fx::Error starting with FX's
// "ShapeProp error for: node=<the node> with meta={...}", followed by the
// cause (FX prints the cause's traceback to stderr instead).

#include <fx/interpreter.h>

#include <c10/core/MemoryFormat.h>
#include <c10/core/QScheme.h>
#include <c10/core/ScalarType.h>

#include <iosfwd>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace fx {
class GraphModule;
}

namespace fx::passes {

// The quantization parameters of a quantized tensor (FX's `qparams` dict):
// per-tensor schemes have one scale and zero point, per-channel schemes one
// of each per channel, and an axis.
struct QParams {
  c10::QScheme qscheme = c10::kPerTensorAffine;
  std::vector<double> scale;
  std::vector<double> zero_point;  // integers, except for per_channel_affine_float_qparams
  std::optional<int64_t> axis;     // per-channel schemes
  bool per_channel() const { return axis.has_value(); }
  bool operator==(const QParams&) const = default;
};

// torch.fx.passes.shape_prop.TensorMetadata: what a tensor value looked like.
struct TensorMetadata {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool requires_grad = false;
  std::vector<int64_t> stride;
  // The first of contiguous_format, channels_last, channels_last_3d in which
  // the tensor is contiguous; none when it is in none of them.
  std::optional<c10::MemoryFormat> memory_format;
  bool is_quantized = false;
  std::optional<QParams> qparams;  // set when is_quantized (FX: {} otherwise)

  // The NamedTuple's repr: `TensorMetadata(shape=torch.Size([2, 3]),
  // dtype=torch.float32, requires_grad=False, stride=(3, 1),
  // memory_format=torch.contiguous_format, is_quantized=False, qparams={})`.
  std::string repr() const;
  bool operator==(const TensorMetadata&) const = default;
};

// Prints repr().
std::ostream& operator<<(std::ostream& os, const TensorMetadata& m);

// FX's _extract_tensor_metadata.
TensorMetadata extract_tensor_metadata(const at::Tensor& t);

// meta["tensor_meta"] of a node whose value is a tuple, list or dict: the
// same structure, each tensor replaced by its TensorMetadata and any other
// value kept as its repr (FX keeps the object itself).
struct TensorMetadataTree {
  enum class Kind { tensor, tuple, list, dict, other };
  Kind kind = Kind::other;
  TensorMetadata tensor;                  // Kind::tensor
  std::vector<TensorMetadataTree> items;  // tuple, list, dict (the values)
  std::vector<std::string> keys;          // dict
  std::string other;                      // Kind::other: repr of the value (`None`, `3`)

  // Python's repr of the structure: `(TensorMetadata(...), None)`.
  std::string repr() const;
};
std::ostream& operator<<(std::ostream& os, const TensorMetadataTree& t);

// The tensor metadata of a node after ShapeProp, whichever form it has:
// calls fn(const TensorMetadata&) for each tensor of the node's value, in
// order (nothing when it has no "tensor_meta").
template <class F>
void for_each_tensor_meta(const Node& n, F&& fn);

class ShapeProp : public Interpreter {
 public:
  explicit ShapeProp(GraphModule& module);

  // Runs the module on `inputs` (one per placeholder; trailing placeholders
  // with defaults may be left out) and returns its output, recording meta on
  // every node. Throws fx::Error when more inputs are given than the graph
  // has placeholders (FX ignores the extra ones), and ShapeProp's error
  // naming the node when a node fails.
  Value propagate(std::vector<Value> inputs);

  Value run_node(Node* n) override;

 private:
  bool is_parameter(const at::Tensor& t);
  // The TensorImpls of the module's parameters, gathered at the first get_attr.
  std::optional<std::unordered_set<const void*>> parameters_;
};

// ---- implementation --------------------------------------------------------

namespace detail {
template <class F>
void visit_tree(const TensorMetadataTree& t, F& fn) {
  if (t.kind == TensorMetadataTree::Kind::tensor) fn(t.tensor);
  for (const auto& item : t.items) visit_tree(item, fn);
}
}  // namespace detail

template <class F>
void for_each_tensor_meta(const Node& n, F&& fn) {
  if (const auto* tm = n.meta().get<TensorMetadata>("tensor_meta")) {
    fn(*tm);
  } else if (const auto* tree = n.meta().get<TensorMetadataTree>("tensor_meta")) {
    detail::visit_tree(*tree, fn);
  }
}

}  // namespace fx::passes
