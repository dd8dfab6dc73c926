#pragma once
// The base of fx::nn's modules (torch.nn in Python).

#include <fx/module.h>

#include <memory>

namespace fx::nn {

// A standard module: a leaf for the tracer (one call_module node, as
// torch.fx's Tracer.is_leaf_module treats torch.nn modules). Containers
// (Sequential, ModuleList, ModuleDict) derive from fx::Module instead and are
// traced through.
class StandardModule : public Module {
 public:
  using Module::Module;
  bool is_standard_leaf() const override { return true; }
};

using ModulePtr = std::shared_ptr<torch::nn::Module>;
using OptionalDevice = c10::optional<c10::Device>;

// The end of every clone(): `copy` was constructed with the configuration of
// `from`; give it `from`'s tensors and training flags, then move it.
template <class M>
ModulePtr finish_clone(std::shared_ptr<M> copy, const Module& from, const OptionalDevice& device) {
  copy->copy_state_from(from);
  if (device) copy->to(*device);
  return copy;
}

}  // namespace fx::nn
