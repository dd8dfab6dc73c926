// What several commands share: loading the module, its inputs and outputs.
#include <fx/graph_module_file.h>
#include <fx/state_dict.h>
#include <unistd.h>

#include "commands.h"

namespace fxc {

std::unique_ptr<fx::GraphModule> load_module(const std::string& path) { return fx::load(path); }

std::vector<c10::IValue> read_inputs(const fx::GraphModule& gm, const std::string& path) {
  std::vector<at::Tensor> tensors = fx::read_tensors(path);
  size_t required = 0, total = 0;
  std::string names;
  for (fx::Node* n : gm.graph().nodes()) {
    if (n->op() != fx::Op::placeholder) continue;
    names += (total ? ", " : "") + n->name();
    ++total;
    if (n->args().empty()) ++required;  // no default value
  }
  if (tensors.size() < required || tensors.size() > total)
    throw fx::Error(path + " holds " + std::to_string(tensors.size()) + " tensor" + (tensors.size() == 1 ? "" : "s") +
                    ", but the module takes " +
                    (required == total ? std::to_string(total) : std::to_string(required) + " to " + std::to_string(total)) +
                    " input" + (total == 1 ? "" : "s") + " (" + names + ")");
  return {tensors.begin(), tensors.end()};
}

std::vector<c10::IValue> output_values(const c10::IValue& out) {
  if (out.isTuple()) return out.toTupleRef().elements().vec();
  if (out.isList()) return out.toListRef().vec();
  return {out};
}

bool is_terminal(int fd) { return isatty(fd) == 1; }

}  // namespace fxc
