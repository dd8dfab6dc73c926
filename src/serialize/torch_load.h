#pragma once
// The state-dict reader of torch_load.cpp on an archive that is already open,
// for files that hold a state dict beside other records (fxcpp's GraphModule
// files).

#include <fx/state_dict.h>

#include <caffe2/serialize/inline_container.h>

#include <string>

namespace fx::detail {

// torch.load of the archive's data.pkl, which must be a dict of tensors.
// `name` names the archive in error messages (fx::Error).
StateDict read_state_dict(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name);

}  // namespace fx::detail
