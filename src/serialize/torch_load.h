#pragma once
// The state-dict reader of torch_load.cpp on an archive that is already open,
// and the writer of state_dict.cpp into one, for files that hold a state dict
// beside other records (fxcpp's GraphModule files).

#include <fx/state_dict.h>

#include <ATen/core/ivalue.h>
#include <caffe2/serialize/inline_container.h>

#include <string>

namespace fx::detail {

// torch.load of the archive's data.pkl, which must be a dict of tensors.
// `name` names the archive in error messages (fx::Error).
StateDict read_state_dict(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name);

// torch.save's records for `value` (data.pkl, data/<i>, byteorder) into an
// open archive; the caller adds its own records and ends the file. Dicts and
// lists are pickled plain, as Python's pickle does, without the type tags
// (torch.jit._pickle.restore_type_tag) that torch::pickle_save adds: torch.load
// of torch >= 2.6 defaults to weights_only=True, which refuses that global.
void write_torch_save(const c10::IValue& value, caffe2::serialize::PyTorchStreamWriter& writer);

}  // namespace fx::detail
