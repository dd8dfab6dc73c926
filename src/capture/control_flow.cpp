// fx::cond and fx::while_loop, eagerly and under fx::capture (control_flow.h).
#include <fx/control_flow.h>

#include <fx/error.h>

#include "recorder.h"

namespace fx {

namespace {

using capture_detail::Recorder;

bool predicate(const char* fn, const at::Tensor& pred) {
  if (!pred.defined() || pred.numel() != 1)
    throw Error(
        std::string(fn) + ": the predicate must be a one-element tensor, got " +
        (pred.defined() ? std::to_string(pred.numel()) + " elements" : std::string("an undefined tensor")));
  return pred.item().toBool();
}

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

std::string describe(const Tensors& ts) {
  std::string s = std::to_string(ts.size()) + " tensor" + (ts.size() == 1 ? "" : "s") + " (";
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + std::string(c10::toString(ts[i].scalar_type())) + c10::str(ts[i].sizes());
  return s + ")";
}

bool same_metadata(const Tensors& a, const Tensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].scalar_type() != b[i].scalar_type() || a[i].sizes() != b[i].sizes()) return false;
  return true;
}

Args operand_args(Recorder& r, const Tensors& ts) {
  Tuple t;
  for (const auto& x : ts) t.items.push_back(r.argument_of(x));
  return {t};
}

}  // namespace

Tensors cond(const at::Tensor& pred, const TensorsFn& true_fn, const TensorsFn& false_fn,
             const Tensors& operands) {
  if (!true_fn || !false_fn) throw Error("fx::cond: true_fn and false_fn must both be functions");
  Recorder* r = capture_detail::recorder_here();
  if (!r) return predicate("fx::cond", pred) ? true_fn(operands) : false_fn(operands);

  // Both branches are captured (each runs once, eagerly, on the operands);
  // the graph records both, and the predicate picks whose outputs the code
  // goes on with.
  Captured t = capture_subgraph(
      *r, [&] { return as_tuple(true_fn(operands)); }, operands);
  Captured f = capture_subgraph(
      *r, [&] { return as_tuple(false_fn(operands)); }, operands);
  const Tensors true_out = tensors_of(t.result), false_out = tensors_of(f.result);
  if (!same_metadata(true_out, false_out))
    throw TraceError(
        "fx::cond: the branches must return the same number of tensors with the same dtypes and "
        "sizes: true_fn returns " +
        describe(true_out) + ", false_fn returns " + describe(false_out));
  bool picked = false;
  capture_detail::run_unrecorded([&] { picked = predicate("fx::cond", pred); });
  const int i = r->free_index({"true_graph_", "false_graph_"});
  Args args{r->argument_of(pred), r->subgraph("true_graph_" + std::to_string(i), t.module),
            r->subgraph("false_graph_" + std::to_string(i), f.module)};
  for (auto& a : operand_args(*r, operands)) args.push_back(std::move(a));
  const Tensors& out = picked ? true_out : false_out;
  r->record_higher_order("torch.ops.higher_order.cond", std::move(args), out);
  return out;
}

Tensors while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn, const Tensors& carried) {
  if (!cond_fn || !body_fn) throw Error("fx::while_loop: cond_fn and body_fn must both be functions");
  auto loop = [&] {
    Tensors values = carried;
    while (predicate("fx::while_loop", cond_fn(values))) {
      Tensors next = body_fn(values);
      if (!same_metadata(next, values))
        throw TraceError("fx::while_loop: body_fn must return what it is given: it was given " +
                         describe(values) + " and returned " + describe(next));
      values = std::move(next);
    }
    return values;
  };
  Recorder* r = capture_detail::recorder_here();
  if (!r) return loop();

  // The condition and the body are captured once each on the initial
  // values; the loop itself then runs unrecorded, for the values the code
  // goes on with.
  Captured c = capture_subgraph(
      *r, [&] { return c10::IValue(cond_fn(carried)); }, carried);
  Captured b = capture_subgraph(
      *r, [&] { return as_tuple(body_fn(carried)); }, carried);
  const Tensors body_out = tensors_of(b.result);
  if (!same_metadata(body_out, carried))
    throw TraceError("fx::while_loop: body_fn must return what it is given: it was given " +
                     describe(carried) + " and returned " + describe(body_out));
  Tensors out;
  capture_detail::run_unrecorded([&] { out = loop(); });
  const int i = r->free_index({"while_loop_cond_graph_", "while_loop_body_graph_"});
  Args args{r->subgraph("while_loop_cond_graph_" + std::to_string(i), c.module),
            r->subgraph("while_loop_body_graph_" + std::to_string(i), b.module)};
  for (auto& a : operand_args(*r, carried)) args.push_back(std::move(a));
  args.push_back(Tuple{});
  r->record_higher_order("torch.ops.higher_order.while_loop", std::move(args), out);
  return out;
}

}  // namespace fx
