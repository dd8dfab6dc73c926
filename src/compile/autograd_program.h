#pragma once
// Compiled code that autograd sees: a call of a compiled module made while
// grad mode is on and a parameter or an input requires grad. As
// torch.compile's AOTAutograd: the forward and its backward are captured as
// one joint graph, split in two (partition.cpp), each compiled, and the call
// runs the compiled forward inside one autograd node whose backward runs
// the compiled backward. loss.backward() then adds the parameters'
// gradients as it would for eager code.

#include <fx/capture.h>
#include <fx/graph_module.h>
#include <fx/passes/shape_prop.h>

#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

namespace fx::compile_detail {

// What the joint capture found about the code's result and its gradients.
struct JointLayout {
  // The code's result with each tensor in it undefined: run_autograd puts
  // the forward's outputs there, in order.
  c10::IValue skeleton;
  size_t outputs = 0;                // tensors in the result
  std::vector<bool> differentiable;  // per output: it requires grad (it has a tangent)
  size_t tangents = 0;
  // Per differentiable input (differentiable_inputs): the joint graph
  // returns its gradient.
  std::vector<bool> has_grad;
  // False when an input that requires grad is inside a list or tuple, or
  // the result holds a dict: such calls run the code as it is.
  bool supported = true;
};

// The tensors a call is differentiated for: those of `parameters` (the
// root's, as the compiled module keeps them for its guard) that require
// grad, then the tensors among `graph_inputs` that require grad. Sets
// `nested` when a list or tuple holds one.
std::vector<at::Tensor> differentiable_inputs(const std::vector<at::Tensor>& parameters,
                                              const std::vector<c10::IValue>& graph_inputs, bool& nested);

// `fn` (a function of the graph inputs) as a joint function to capture: it
// runs fn and then autograd's gradients of fn's differentiable outputs for
// differentiable_inputs, with tangents of ones made where the capture
// records them, and returns (outputs..., tangents..., gradients...) flat.
// It fills `layout`. fn's own result keeps its autograd graph
// (retain_graph), so that the call that captures can return it.
CaptureFunction joint_function(CaptureFunction fn, const std::vector<at::Tensor>& parameters,
                               JointLayout& layout);

// A compiled forward and backward of one specialization.
struct AutogradProgram {
  JointLayout layout;
  // The joint graph and its two parts as captured, which own what the
  // compiled graphs read; the compiled forward and backward.
  std::unique_ptr<GraphModule> joint, captured_forward, captured_backward;
  std::unique_ptr<GraphModule> forward, backward;
  // The names of the values the forward saves, for errors.
  std::vector<std::string> saved_names;
  // Each tangent's layout: a gradient autograd hands over laid out
  // otherwise is copied so, one it does not hand over is zeros.
  std::vector<passes::TensorMetadata> tangents;
};

// One call: the compiled forward on the call's graph inputs, inside an
// autograd node whose backward is the compiled backward.
c10::IValue run_autograd(const std::shared_ptr<const AutogradProgram>& program,
                         const std::vector<at::Tensor>& parameters,
                         const std::vector<c10::IValue>& graph_inputs);

}  // namespace fx::compile_detail
