#pragma once
// fx::cond and fx::while_loop run in the runtime (control_flow.cpp), which
// the runtime's own torch.ops.higher_order adapters call too. Under
// fx::capture they record a higher-order node instead; capture is a layer
// above, so it installs its recording versions here whenever a capture
// starts (src/capture/control_flow.cpp, called by run_recording). Each
// returns nullopt when no capture records on the calling thread.

#include <fx/control_flow.h>

#include <optional>
#include <string>

namespace fx::detail {

struct ControlFlowCapture {
  std::optional<Tensors> (*cond)(const at::Tensor& pred, const TensorsFn& true_fn, const TensorsFn& false_fn,
                                 const Tensors& operands);
  std::optional<Tensors> (*while_loop)(const PredicateFn& cond_fn, const TensorsFn& body_fn,
                                       const Tensors& carried);
};
void install_control_flow_capture(const ControlFlowCapture* capture);

// The eager semantics both share.
// pred as a bool; fx::Error unless it is a one-element tensor. `fn` names the caller.
bool control_flow_predicate(const char* fn, const at::Tensor& pred);
// The loop, run eagerly; TraceError when body_fn changes the carried values' metadata.
Tensors run_while_loop(const PredicateFn& cond_fn, const TensorsFn& body_fn, const Tensors& carried);
// "2 tensors (Float[2, 3], Long[])", for messages.
std::string describe_tensors(const Tensors& ts);
// The same count, dtypes and sizes.
bool same_tensor_metadata(const Tensors& a, const Tensors& b);
// TraceError unless body_fn's `returned` has the metadata of what it was `given`.
void check_loop_body(const Tensors& given, const Tensors& returned);

}  // namespace fx::detail
