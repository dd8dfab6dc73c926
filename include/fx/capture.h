#pragma once
// fx::capture: an ATen-level graph of any LibTorch code, forward and
// backward (what torch.fx.experimental.proxy_tensor.make_fx does in Python).
//
// The code runs once on the example inputs, unchanged: stock torch::nn
// modules, free functions over torch::Tensor, fx::Module models, a training
// step that calls loss.backward(). Every ATen operator call that reaches the
// dispatcher becomes a call_function node whose target is the overload
// (`torch.ops.aten.addmm.default`); the inputs become placeholders
// (`arg0_1`, ...), the parameters and buffers of `root` get_attr nodes named
// by their path, other tensors `_tensor_constant0`-style attributes, and the
// output keeps the structure the function returns. docs/capture.md says how
// it works and where it differs from make_fx.
//
// What the code computes from tensor data in C++ (a branch on
// `x.item<float>()`) is specialized: the graph holds this run's path.
// Operators whose result is data itself (item, nonzero, ...) are rejected
// with fx::TraceError unless allow_data_dependent is set. Sizes read with
// `x.size(0)` are specialized too, except for the dimensions that
// CaptureOptions::dynamic_shapes marks: those become symbolic.

#include <fx/graph_module.h>

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace fx {

class Module;

// A dimension whose size may vary (torch.export.Dim): the sizes it may take
// are [min, max]. Dimensions that share a non-empty name are one symbol, and
// must have the same size. Sizes 0 and 1 are left out by default: a size of 1
// broadcasts, so code is usually another program there (torch.export's 0/1
// specialization).
struct Dim {
  std::string name;
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct CaptureOptions {
  // The names of the inputs: input i becomes placeholder `<name>_1`, as
  // make_fx names a function's parameters. Default: arg0, arg1, ...
  std::vector<std::string> input_names;
  // Run CompositeImplicitAutograd operators (matmul, dropout, batch_norm,
  // ...) as their decompositions and record what they call, as make_fx does;
  // false records them as called.
  bool decompose = true;
  // Record in-place and out= operators as their out-of-place equivalents
  // (add_ -> add), write updates made through views into their bases
  // (select_scatter, slice_scatter, ...), replay views whose base changed,
  // and write updates of inputs and attributes back with copy_ after the
  // outputs: make_fx(functionalize(f)). Without it, an in-place update of an
  // input is an fx::TraceError.
  bool functionalize = false;
  // Record operators whose result depends on tensor data (item, nonzero,
  // unique, ...) as they ran, specializing the graph on this run. Without
  // it they are an fx::TraceError naming the operator.
  bool allow_data_dependent = false;
  // meta["stack_trace"] on every node: the C++ frames of the code that
  // called the operator (slow: a backtrace per operator).
  bool record_stack_traces = false;
  std::string class_name = "GraphModule";
  // Dimensions whose size may vary, per input: dynamic_shapes[i] maps a
  // dimension of input i (a tensor) to its Dim, as torch.export's
  // dynamic_shapes does. Each becomes a symbol (s0, s1, ... in order of
  // first appearance), and every integer of the graph that follows these
  // sizes becomes a sym_size.int node or SymInt arithmetic on such nodes
  // (operator.mul, ...), as make_fx(tracing_mode="symbolic") records them; the
  // graph then runs at any size in range. C++ sizes are plain integers with
  // no history, so the function is captured again at other sizes (once per
  // symbol, and once with all of them changed) and each such integer is
  // written as what it equals at all of them. Code that takes another path
  // at another size, or computes a float from a size, is an fx::TraceError
  // naming the node. docs/capture.md, "Dynamic dimensions", says more.
  std::vector<std::map<int64_t, Dim>> dynamic_shapes;
};

using CaptureFunction = std::function<c10::IValue(const std::vector<c10::IValue>&)>;

// Captures `fn` run on `example_inputs` (tensors, or lists/tuples of
// tensors). Tensors that fn reads but did not receive become attributes:
// `_param_constant<i>` for leaves that require grad (parameters), else
// `_tensor_constant<i>`.
std::unique_ptr<GraphModule> capture(const CaptureFunction& fn,
                                     const std::vector<c10::IValue>& example_inputs,
                                     const CaptureOptions& options = {});

// The same, with the parameters and buffers of `root` (found by identity)
// read through get_attr nodes named by their path (`layer1.0.conv1.weight`).
std::unique_ptr<GraphModule> capture(torch::nn::Module& root, const CaptureFunction& fn,
                                     const std::vector<c10::IValue>& example_inputs,
                                     const CaptureOptions& options = {});

// A stock torch::nn module called on one tensor (`fx::capture_module(conv, x)`
// for a torch::nn::Conv2d, Sequential, LSTM, ...): its forward as the code
// would call it, its parameters and buffers named by path. (Not an overload
// of capture: a holder's templated operator() breaks overload resolution
// against CaptureFunction.)
template <class Holder>
requires requires(Holder& h, const at::Tensor& t) {
  c10::IValue(h->forward(t));
  h.ptr();
}
std::unique_ptr<GraphModule> capture_module(Holder& module, const at::Tensor& example_input,
                                            const CaptureOptions& options = {}) {
  auto forward = [&module](const std::vector<c10::IValue>& in) -> c10::IValue {
    return c10::IValue(module->forward(in[0].toTensor()));
  };
  return capture(*module.ptr(), forward, {example_input}, options);
}

// An fx::Module's forward, run eagerly; inputs are named after forward's
// parameters unless options name them.
std::unique_ptr<GraphModule> capture(Module& module, const std::vector<c10::IValue>& example_inputs,
                                     CaptureOptions options = {});

// A training step as one joint graph: `step` runs forward, a loss and
// loss.backward(); the graph returns `(result, grads)`, where grads is a
// dict from the path of each parameter of `root` that received a gradient to
// that gradient. The parameters' .grad() are left as they were before.
std::unique_ptr<GraphModule> capture_training_step(torch::nn::Module& root, const CaptureFunction& step,
                                                   const std::vector<c10::IValue>& example_inputs,
                                                   const CaptureOptions& options = {});

}  // namespace fx
