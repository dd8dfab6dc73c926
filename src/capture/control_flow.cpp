// fx::cond and fx::while_loop under fx::capture: both branches, or the
// loop's condition and body, captured as subgraphs of a higher-order node.
// The runtime runs them otherwise (src/runtime/control_flow.cpp) and calls
// these through the hooks install_control_flow_recording installs.
#include <fx/control_flow.h>

#include <fx/error.h>

#include "../runtime/control_flow_capture.h"
#include "recorder.h"

namespace fx {

namespace {

using capture_detail::Recorder;

struct Captured {
  std::shared_ptr<GraphModule> module;
  c10::IValue result;
};

// `fn` on `operands`, captured into a GraphModule of its own (placeholders
// arg0_1, arg1_1, ... for the operands), as make_fx traces a branch.
Captured capture_subgraph(Recorder& outer, const std::function<c10::IValue()>& fn, const Tensors& operands) {
  Recorder inner(outer.options(), outer.root());
  inner.set_enclosing(&outer);
  std::vector<std::string> names;
  std::vector<c10::IValue> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    names.push_back("arg" + std::to_string(i));
    inputs.emplace_back(operands[i]);
  }
  inner.add_inputs(names, inputs);
  Captured c;
  capture_detail::run_nested(inner, [&] { c.result = fn(); });
  inner.finish(c.result);
  auto attrs = inner.take_attributes();
  c.module = std::make_shared<GraphModule>(attrs, inner.take_graph());
  return c;
}

c10::IValue as_tuple(const Tensors& ts) {
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(ts.begin(), ts.end()));
}

Tensors tensors_of(const c10::IValue& v) {
  Tensors out;
  for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
  return out;
}

Args operand_args(Recorder& r, const Tensors& ts) {
  Tuple t;
  for (const auto& x : ts) t.items.push_back(r.argument_of(x));
  return {t};
}

std::optional<Tensors> record_cond(const at::Tensor& pred, const TensorsFn& true_fn,
                                   const TensorsFn& false_fn, const Tensors& operands) {
  Recorder* r = capture_detail::recorder_here();
  if (!r) return std::nullopt;

  // Both branches are captured (each runs once, eagerly, on the operands);
  // the graph records both, and the predicate picks whose outputs the code
  // goes on with.
  Captured t = capture_subgraph(
      *r, [&] { return as_tuple(true_fn(operands)); }, operands);
  Captured f = capture_subgraph(
      *r, [&] { return as_tuple(false_fn(operands)); }, operands);
  const Tensors true_out = tensors_of(t.result), false_out = tensors_of(f.result);
  if (!detail::same_tensor_metadata(true_out, false_out))
    throw TraceError(
        "fx::cond: the branches must return the same number of tensors with the same dtypes and "
        "sizes: true_fn returns " +
        detail::describe_tensors(true_out) + ", false_fn returns " + detail::describe_tensors(false_out));
  bool picked = false;
  capture_detail::run_unrecorded([&] { picked = detail::control_flow_predicate("fx::cond", pred); });
  const int i = r->free_index({"true_graph_", "false_graph_"});
  Args args{r->argument_of(pred), r->subgraph("true_graph_" + std::to_string(i), t.module),
            r->subgraph("false_graph_" + std::to_string(i), f.module)};
  for (auto& a : operand_args(*r, operands)) args.push_back(std::move(a));
  const Tensors& out = picked ? true_out : false_out;
  r->record_higher_order("torch.ops.higher_order.cond", std::move(args), out);
  return out;
}

std::optional<Tensors> record_while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn,
                                         const Tensors& carried) {
  Recorder* r = capture_detail::recorder_here();
  if (!r) return std::nullopt;

  // The condition and the body are captured once each on the initial
  // values; the loop itself then runs unrecorded, for the values the code
  // goes on with.
  Captured c = capture_subgraph(
      *r, [&] { return c10::IValue(cond_fn(carried)); }, carried);
  Captured b = capture_subgraph(
      *r, [&] { return as_tuple(body_fn(carried)); }, carried);
  const Tensors body_out = tensors_of(b.result);
  detail::check_loop_body(carried, body_out);
  Tensors out;
  capture_detail::run_unrecorded([&] { out = detail::run_while_loop(cond_fn, body_fn, carried); });
  const int i = r->free_index({"while_loop_cond_graph_", "while_loop_body_graph_"});
  Args args{r->subgraph("while_loop_cond_graph_" + std::to_string(i), c.module),
            r->subgraph("while_loop_body_graph_" + std::to_string(i), b.module)};
  for (auto& a : operand_args(*r, carried)) args.push_back(std::move(a));
  args.push_back(Tuple{});
  r->record_higher_order("torch.ops.higher_order.while_loop", std::move(args), out);
  return out;
}

const detail::ControlFlowCapture recording{record_cond, record_while_loop};

}  // namespace

namespace capture_detail {
void install_control_flow_recording() { detail::install_control_flow_capture(&recording); }
}  // namespace capture_detail

}  // namespace fx
