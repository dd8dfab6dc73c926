// fx::cond and fx::while_loop (control_flow.h): eagerly here, recorded by
// fx::capture when one runs on this thread (control_flow_capture.h).
#include <fx/control_flow.h>
#include <fx/error.h>
#include <fx/value.h>  // TraceError

#include <atomic>

#include "control_flow_capture.h"

namespace fx {

namespace detail {

namespace {
std::atomic<const ControlFlowCapture*> installed_capture{nullptr};
}  // namespace

void install_control_flow_capture(const ControlFlowCapture* capture) { installed_capture.store(capture); }

bool control_flow_predicate(const char* fn, const at::Tensor& pred) {
  if (!pred.defined() || pred.numel() != 1)
    throw Error(
        std::string(fn) + ": the predicate must be a one-element tensor, got " +
        (pred.defined() ? std::to_string(pred.numel()) + " elements" : std::string("an undefined tensor")));
  return pred.item().toBool();
}

std::string describe_tensors(const Tensors& ts) {
  std::string s = std::to_string(ts.size()) + " tensor" + (ts.size() == 1 ? "" : "s") + " (";
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + std::string(c10::toString(ts[i].scalar_type())) + c10::str(ts[i].sizes());
  return s + ")";
}

bool same_tensor_metadata(const Tensors& a, const Tensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].scalar_type() != b[i].scalar_type() || a[i].sizes() != b[i].sizes()) return false;
  return true;
}

void check_loop_body(const Tensors& given, const Tensors& returned) {
  if (!same_tensor_metadata(returned, given))
    throw TraceError("fx::while_loop: body_fn must return what it is given: it was given " +
                     describe_tensors(given) + " and returned " + describe_tensors(returned));
}

Tensors run_while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn, const Tensors& carried) {
  Tensors values = carried;
  while (control_flow_predicate("fx::while_loop", cond_fn(values))) {
    Tensors next = body_fn(values);
    check_loop_body(values, next);
    values = std::move(next);
  }
  return values;
}

}  // namespace detail

Tensors cond(const at::Tensor& pred, const TensorsFn& true_fn, const TensorsFn& false_fn,
             const Tensors& operands) {
  if (!true_fn || !false_fn) throw Error("fx::cond: true_fn and false_fn must both be functions");
  if (const auto* capture = detail::installed_capture.load())
    if (auto recorded = capture->cond(pred, true_fn, false_fn, operands)) return std::move(*recorded);
  return detail::control_flow_predicate("fx::cond", pred) ? true_fn(operands) : false_fn(operands);
}

Tensors while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn, const Tensors& carried) {
  if (!cond_fn || !body_fn) throw Error("fx::while_loop: cond_fn and body_fn must both be functions");
  if (const auto* capture = detail::installed_capture.load())
    if (auto recorded = capture->while_loop(cond_fn, body_fn, carried)) return std::move(*recorded);
  return detail::run_while_loop(cond_fn, body_fn, carried);
}

}  // namespace fx
