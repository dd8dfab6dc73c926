// The joint capture of a forward and its backward, and the autograd node
// that runs their compiled graphs (autograd_program.h).
#include "autograd_program.h"

#include <fx/error.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/graph_task.h>

#include <string>
#include <utility>

namespace fx::compile_detail {

namespace {

// The tensors of a result, in order, into `out`; false for a dict, which
// the skeleton does not rebuild.
bool flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
    return true;
  }
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    return true;
  }
  if (v.isTuple() || v.isList()) {
    const auto items = v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    for (const auto& item : items)
      if (!flatten(item, out)) return false;
    return true;
  }
  return !v.isGenericDict();
}

// `v` with its tensors replaced by the next of `tensors` (undefined ones:
// the skeleton), from `k` on.
c10::IValue replace_tensors(const c10::IValue& v, const std::vector<at::Tensor>& tensors, size_t& k) {
  if (v.isTensor()) return tensors.empty() ? at::Tensor() : tensors.at(k++);
  if (v.isTensorList()) {
    c10::List<at::Tensor> list;
    for (size_t i = 0, n = v.toTensorList().size(); i < n; ++i)
      list.push_back(tensors.empty() ? at::Tensor() : tensors.at(k++));
    return list;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& item : v.toTupleRef().elements()) items.push_back(replace_tensors(item, tensors, k));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isList()) {
    c10::impl::GenericList list(v.toList().elementType());
    for (const auto& item : v.toListRef()) list.push_back(replace_tensors(item, tensors, k));
    return list;
  }
  return v;
}

// The tensor of a graph output; undefined for None (an undefined tensor
// the code returned).
at::Tensor tensor_at(const std::vector<c10::IValue>& items, size_t i) {
  return items.at(i).isNone() ? at::Tensor() : items[i].toTensor();
}

// The program, carried in the autograd node's saved data.
struct ProgramHolder : torch::CustomClassHolder {
  explicit ProgramHolder(std::shared_ptr<const AutogradProgram> p) : program(std::move(p)) {}
  std::shared_ptr<const AutogradProgram> program;
};

struct CompiledFunction : torch::autograd::Function<CompiledFunction> {
  // `wrt` are differentiable_inputs: autograd's edges to the parameters and
  // inputs; the compiled forward reads the graph inputs (and the
  // parameters through get_attr) itself.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                c10::intrusive_ptr<ProgramHolder> holder,
                                                const std::vector<c10::IValue>& graph_inputs,
                                                at::TensorList wrt) {
    (void)wrt;
    const AutogradProgram& p = *holder->program;
    const c10::IValue out = p.forward->run(graph_inputs);
    const auto& items = out.toTupleRef().elements();
    torch::autograd::variable_list outputs, constant;
    for (size_t i = 0; i < p.layout.outputs; ++i) {
      outputs.push_back(tensor_at(items, i));
      if (!p.layout.differentiable[i] && outputs.back().defined()) constant.push_back(outputs.back());
    }
    // Kept in saved_data rather than by save_for_backward, so that the
    // backward can let go of each value after its last use, as eager's
    // autograd frees each node's saved tensors when that node has run.
    // Each is a detached alias (an output's own tensor would hold this node
    // through its grad_fn: a cycle); its version is kept to find in-place
    // changes, as SavedVariable does.
    c10::List<at::Tensor> saved;
    c10::List<int64_t> versions;
    for (size_t i = p.layout.outputs; i < items.size(); ++i) {
      saved.push_back(items[i].toTensor().detach());
      versions.push_back(static_cast<int64_t>(saved.get(saved.size() - 1)._version()));
    }
    ctx->saved_data["saved"] = std::move(saved);
    ctx->saved_data["versions"] = std::move(versions);
    ctx->mark_non_differentiable(constant);
    ctx->saved_data["program"] = c10::IValue::make_capsule(holder);
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    if (at::GradMode::is_enabled())
      throw Error(
          "fx::compile: the backward of a compiled call was run with create_graph=true; the compiled "
          "backward records no graph of its own, so it has no second derivative. Differentiate twice "
          "without fx::compile");
    auto holder = c10::static_intrusive_pointer_cast<ProgramHolder>(ctx->saved_data["program"].toCapsule());
    const AutogradProgram& p = *holder->program;
    auto found = ctx->saved_data.find("saved");
    if (found == ctx->saved_data.end())
      throw Error(
          "fx::compile: the backward of a compiled call ran a second time, and its saved values were "
          "freed after the first; pass retain_graph=true to the first backward to run it again");
    std::vector<c10::IValue> in;
    {
      // Unless the graph is kept for another backward, the compiled
      // backward holds the only references, and frees each value after
      // its last use.
      const c10::List<at::Tensor> saved = found->second.toTensorList();
      if (!torch::autograd::get_current_graph_task_keep_graph()) ctx->saved_data.erase(found);
      const c10::List<int64_t> versions = ctx->saved_data.at("versions").toIntList();
      for (size_t i = 0; i < saved.size(); ++i) {
        at::Tensor s = saved.get(i);
        if (static_cast<int64_t>(s._version()) != versions.get(i))
          throw Error("fx::compile: one of the values the compiled backward needs ('" + p.saved_names.at(i) +
                      "' of the forward) was modified by an in-place operation: it is at version " +
                      std::to_string(s._version()) + ", the forward saved version " +
                      std::to_string(versions.get(i)) + ". Change a copy of it instead");
        in.emplace_back(std::move(s));
      }
    }
    for (size_t i = 0, k = 0; i < p.layout.outputs; ++i) {
      if (!p.layout.differentiable[i]) continue;
      const passes::TensorMetadata& m = p.tangents.at(k++);
      const at::Tensor& g = grad_outputs.at(i);
      if (g.defined() && g.sizes() == c10::IntArrayRef(m.shape) &&
          g.strides() == c10::IntArrayRef(m.stride)) {
        in.emplace_back(g);
        continue;
      }
      at::Tensor t = at::empty_strided(m.shape, m.stride, at::TensorOptions().dtype(m.dtype));
      if (g.defined())
        t.copy_(g);
      else
        t.zero_();
      in.emplace_back(std::move(t));
    }
    const c10::IValue out = p.backward->run(std::move(in));
    const auto& grads = out.toTupleRef().elements();
    // One per argument of forward: the holder, the graph inputs, then wrt.
    torch::autograd::variable_list result(2);
    size_t k = 0;
    for (bool has : p.layout.has_grad) result.push_back(has ? grads.at(k++).toTensor() : at::Tensor());
    return result;
  }
};

}  // namespace

std::vector<at::Tensor> differentiable_inputs(const std::vector<at::Tensor>& parameters,
                                              const std::vector<c10::IValue>& graph_inputs, bool& nested) {
  std::vector<at::Tensor> wrt;
  for (const at::Tensor& p : parameters)
    if (p.requires_grad()) wrt.push_back(p);
  nested = false;
  for (const c10::IValue& v : graph_inputs) {
    if (v.isTensor()) {
      if (v.toTensor().requires_grad()) wrt.push_back(v.toTensor());
      continue;
    }
    std::vector<at::Tensor> inside;
    flatten(v, inside);
    for (const at::Tensor& t : inside) nested = nested || t.requires_grad();
  }
  return wrt;
}

CaptureFunction joint_function(CaptureFunction fn, const std::vector<at::Tensor>& parameters,
                               JointLayout& layout) {
  return [fn = std::move(fn), &parameters, &layout](const std::vector<c10::IValue>& in) -> c10::IValue {
    c10::IValue result = fn(in);
    layout = JointLayout{};
    std::vector<at::Tensor> outputs;
    bool nested = false;
    const std::vector<at::Tensor> wrt = differentiable_inputs(parameters, in, nested);
    layout.supported = flatten(result, outputs) && !nested;
    size_t none = 0;
    layout.skeleton = replace_tensors(result, {}, none);
    layout.outputs = outputs.size();
    std::vector<at::Tensor> differentiable, tangents, grads;
    for (const at::Tensor& t : outputs) {
      layout.differentiable.push_back(t.defined() && t.requires_grad());
      if (layout.differentiable.back()) differentiable.push_back(t);
    }
    if (layout.supported && !differentiable.empty() && !wrt.empty()) {
      for (const at::Tensor& t : differentiable) tangents.push_back(at::ones_like(t));
      grads = torch::autograd::grad(differentiable, wrt, tangents, /*retain_graph=*/true,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    }
    layout.tangents = tangents.size();
    std::vector<c10::IValue> flat(outputs.begin(), outputs.end());
    flat.insert(flat.end(), tangents.begin(), tangents.end());
    layout.has_grad.assign(wrt.size(), false);
    for (size_t i = 0; i < grads.size(); ++i) {
      layout.has_grad[i] = grads[i].defined();
      if (grads[i].defined()) flat.emplace_back(grads[i]);
    }
    return c10::ivalue::Tuple::create(std::move(flat));
  };
}

c10::IValue run_autograd(const std::shared_ptr<const AutogradProgram>& program,
                         const std::vector<at::Tensor>& parameters,
                         const std::vector<c10::IValue>& graph_inputs) {
  const JointLayout& layout = program->layout;
  bool nested = false;
  const std::vector<at::Tensor> wrt = differentiable_inputs(parameters, graph_inputs, nested);
  if (wrt.size() != layout.has_grad.size())
    throw Error("fx::compile: a compiled call differentiates for " + std::to_string(layout.has_grad.size()) +
                " tensors, but this call for " + std::to_string(wrt.size()));
  std::vector<at::Tensor> outputs;
  if (layout.tangents == 0) {
    // Nothing it returns requires grad: no autograd node.
    at::NoGradGuard no_grad;
    const c10::IValue out = program->forward->run(graph_inputs);
    const auto& items = out.toTupleRef().elements();
    for (size_t i = 0; i < layout.outputs; ++i) outputs.push_back(tensor_at(items, i));
  } else {
    // As a TensorList, which autograd takes as its inputs one by one (a
    // vector would be one argument that is not a tensor).
    outputs = CompiledFunction::apply(c10::make_intrusive<ProgramHolder>(program), graph_inputs,
                                      at::TensorList(wrt));
  }
  size_t k = 0;
  return replace_tensors(layout.skeleton, outputs, k);
}

}  // namespace fx::compile_detail
