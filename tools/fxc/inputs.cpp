// What several commands share: loading the module, its inputs and outputs.
#include <fx/exported_program.h>
#include <fx/graph_module_file.h>
#include <fx/state_dict.h>
#include <unistd.h>

#include "commands.h"

namespace fxc {

Program load_program(const std::string& path) {
  Program p;
  if (fx::is_pt2_package(path)) {
    p.exported = std::make_shared<fx::ExportedProgram>(fx::load_exported(path));
    p.module = std::shared_ptr<fx::GraphModule>(p.exported, &p.exported->graph_module());
  } else {
    p.module = fx::load(path);
  }
  return p;
}

std::shared_ptr<fx::GraphModule> load_module(const std::string& path) { return load_program(path).module; }

c10::IValue Program::run(std::vector<c10::IValue> inputs) const {
  return exported ? exported->run_flat(std::move(inputs)) : module->run(std::move(inputs));
}

std::vector<c10::IValue> Program::read_inputs(const std::string& path) const {
  std::vector<at::Tensor> tensors = fx::read_tensors(path);
  size_t required = 0, total = 0;
  std::string names;
  if (exported) {
    for (const auto& spec : exported->graph_signature().input_specs) {
      if (spec.kind != fx::InputSpec::Kind::user_input) continue;
      names += (total ? ", " : "") + spec.name;
      ++total, ++required;
    }
  } else {
    for (fx::Node* n : module->graph().nodes()) {
      if (n->op() != fx::Op::placeholder) continue;
      names += (total ? ", " : "") + n->name();
      ++total;
      if (n->args().empty()) ++required;  // no default value
    }
  }
  if (tensors.size() < required || tensors.size() > total)
    throw fx::Error(path + " holds " + std::to_string(tensors.size()) + " tensor" + (tensors.size() == 1 ? "" : "s") +
                    ", but the " + (exported ? "program" : "module") + " takes " +
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
