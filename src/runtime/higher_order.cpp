// torch.ops.higher_order.cond and while_loop: data-dependent control flow,
// with branches and loop bodies that are submodules (get_attr values).
//
//   cond(pred, true_fn, false_fn, operands)    runs one branch on operands
//   while_loop(cond_fn, body_fn, carried, additional)
//       while cond_fn(*carried, *additional): carried = body_fn(*carried, *additional)
//
// Both return what torch's do: cond the branch's outputs, while_loop the
// final carried values, each a tuple.

#include "internal.h"
#include "module_ivalue.h"

#include <fx/control_flow.h>
#include <fx/graph_module.h>

#include <optional>

namespace fx::runtime {

namespace {

std::shared_ptr<Module> callable(const std::string& fn, const char* what, const c10::IValue& v) {
  auto m = module_of(v);
  if (!m)
    type_error(
        fn, std::string(what) + " must be a submodule (a get_attr of a graph), got " + python_type_name(v));
  return m;
}

// A GraphModule runs on IValues directly; another module through fx::Values.
c10::IValue call(Module& m, std::vector<c10::IValue> args) {
  if (auto* gm = dynamic_cast<GraphModule*>(&m)) return gm->run(std::move(args));
  std::vector<Value> vargs(args.begin(), args.end());
  return m.call(std::move(vargs), {}).ivalue();
}

// The branch's or body's outputs as a list: a tuple or list's items, or one value.
std::vector<c10::IValue> outputs_of(c10::IValue v) {
  if (v.isTuple()) return v.toTupleRef().elements().vec();
  if (v.isList()) return v.toListRef().vec();
  return {std::move(v)};
}

// torch's predicates: a bool, an int, or a one-element tensor.
bool predicate(const std::string& fn, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1)
      type_error(fn, "the predicate must be a one-element tensor or a bool, got a tensor of " +
                         std::to_string(t.numel()) + " elements");
    return t.item().toBool();
  }
  return to_bool(fn, v);
}

// The values as tensors, when each is one.
std::optional<Tensors> all_tensors(const std::vector<c10::IValue>& values) {
  Tensors out;
  out.reserve(values.size());
  for (const auto& v : values) {
    if (!v.isTensor()) return std::nullopt;
    out.push_back(v.toTensor());
  }
  return out;
}

// A submodule as fx::cond's branch: tensors in, tensors out.
TensorsFn tensors_fn(const std::string& fn, std::shared_ptr<Module> m) {
  return [fn, m = std::move(m)](const Tensors& in) {
    auto out = all_tensors(outputs_of(call(*m, std::vector<c10::IValue>(in.begin(), in.end()))));
    if (!out) type_error(fn, "a branch returned a value that is not a tensor");
    return *out;
  };
}

c10::IValue tuple_of(const Tensors& t) {
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(t.begin(), t.end()));
}

// With a tensor predicate and tensor operands, the branches run through
// fx::cond and fx::while_loop, so that fx::capture (and fx::compile, which
// captures) records the operator and both branches instead of the branch
// this run took.
c10::IValue cond(std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
  static const std::string fn = "torch.ops.higher_order.cond";
  auto a = bind(fn, {req("pred"), req("true_fn"), req("false_fn"), req("operands")}, args, kwargs);
  auto true_fn = callable(fn, "true_fn", a[1]);
  auto false_fn = callable(fn, "false_fn", a[2]);
  std::vector<c10::IValue> operands = sequence_items(a[3]);
  if (auto tensors = all_tensors(operands); tensors && a[0].isTensor())
    return tuple_of(fx::cond(a[0].toTensor(), tensors_fn(fn, true_fn), tensors_fn(fn, false_fn), *tensors));
  auto out = call(predicate(fn, a[0]) ? *true_fn : *false_fn, std::move(operands));
  return c10::ivalue::Tuple::create(outputs_of(std::move(out)));
}

c10::IValue while_loop(std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
  static const std::string fn = "torch.ops.higher_order.while_loop";
  auto a = bind(
      fn, {req("cond_fn"), req("body_fn"), req("carried_inputs"), opt("additional_inputs", c10::IValue())},
      args, kwargs);
  auto cond_fn = callable(fn, "cond_fn", a[0]);
  auto body_fn = callable(fn, "body_fn", a[1]);
  std::vector<c10::IValue> carried = sequence_items(a[2]);
  const std::vector<c10::IValue> additional =
      a[3].isNone() ? std::vector<c10::IValue>() : sequence_items(a[3]);
  auto with_additional = [&] {
    std::vector<c10::IValue> all = carried;
    all.insert(all.end(), additional.begin(), additional.end());
    return all;
  };
  if (auto tensors = all_tensors(carried); tensors && additional.empty()) {
    auto predicate_fn = [&](const Tensors& in) {
      c10::IValue p = outputs_of(call(*cond_fn, std::vector<c10::IValue>(in.begin(), in.end()))).at(0);
      if (!p.isTensor()) type_error(fn, "cond_fn returned " + python_type_name(p) + ", not a tensor");
      return p.toTensor();
    };
    return tuple_of(fx::while_loop(predicate_fn, tensors_fn(fn, body_fn), *tensors));
  }
  while (predicate(fn, outputs_of(call(*cond_fn, with_additional())).at(0))) {
    std::vector<c10::IValue> next = outputs_of(call(*body_fn, with_additional()));
    if (next.size() != carried.size())
      type_error(fn, "body_fn returned " + std::to_string(next.size()) + " values for " +
                         std::to_string(carried.size()) + " carried inputs");
    carried = std::move(next);
  }
  return c10::ivalue::Tuple::create(std::move(carried));
}

}  // namespace

void register_higher_order(Adapters& a) {
  a.function("torch.ops.higher_order.cond", cond);
  a.function("torch.ops.higher_order.while_loop", while_loop);
}

}  // namespace fx::runtime
