#pragma once
// fx::ExportedProgram: a program that torch.export wrote, loaded with no
// Python (`torch.export.save(ep, "model.pt2")` in Python, then
// `fx::load_exported("model.pt2")` in C++).
//
// As in torch.export, the program is one ATen-level GraphModule whose
// placeholders are the lifted parameters, buffers and constants followed by
// the user's inputs, and whose outputs are the buffer and input mutations
// followed by the user's outputs; the graph signature says which is which.
// run() gives the graph its lifted inputs from the state dict and writes the
// mutations back, as Python's `ep.module()(*args)` does.
//
// The graph is the one `torch.export.load(path).graph_module` holds: the same
// node names, targets, arguments and order, so that its graph text and code
// are torch's. A node's meta has `tensor_meta` where the file gives static
// sizes, `sym_sizes` (a string per dimension: `5`, the symbol `s77`, or
// sympy's srepr of a composite expression) where it gives symbolic ones, and
// `stack_trace`. Branches of cond and bodies of while_loop are GraphModule
// submodules (`true_graph_0`), read through get_attr, and run.

#include <fx/error.h>
#include <fx/graph_module.h>
#include <fx/state_dict.h>

#include <ATen/core/ivalue.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx {

// torch.export.graph_signature.InputSpec: what one placeholder is.
struct InputSpec {
  enum class Kind { user_input, parameter, buffer, constant_tensor, custom_obj, token, constant_input };
  Kind kind = Kind::user_input;
  std::string name;        // the placeholder's name (`p_lin_weight`, `x`)
  std::string target;      // the state dict or constants key (`lin.weight`); empty for a user input
  bool persistent = true;  // a buffer that state_dict() holds (non-persistent buffers are in constants)
};

// torch.export.graph_signature.OutputSpec: what one output is.
struct OutputSpec {
  enum class Kind {
    user_output,
    loss_output,
    buffer_mutation,
    gradient_to_parameter,
    gradient_to_user_input,
    user_input_mutation,
    token,
    parameter_mutation
  };
  Kind kind = Kind::user_output;
  std::string name;    // the output value's name, empty for a constant output
  std::string target;  // the buffer, parameter or user input it writes, else empty
};

struct ExportGraphSignature {
  std::vector<InputSpec> input_specs;
  std::vector<OutputSpec> output_specs;
  // Python's str(ep.graph_signature):
  //   # inputs
  //   p_lin_weight: PARAMETER target='lin.weight'
  //   x: USER_INPUT
  //   ...
  std::string to_string() const;
};

// The values a symbolic size may take (torch's ValueRanges, VR[2, 64]);
// an unbounded end is nullopt (int_oo).
struct RangeConstraint {
  std::optional<int64_t> min_val;
  std::optional<int64_t> max_val;
};

class ExportedProgram {
 public:
  ExportedProgram(std::unique_ptr<GraphModule> graph_module, ExportGraphSignature signature,
                  StateDict state_dict, StateDict constants,
                  std::map<std::string, RangeConstraint> range_constraints, std::string in_spec,
                  std::string out_spec);
  ExportedProgram(ExportedProgram&&) noexcept;
  ExportedProgram& operator=(ExportedProgram&&) noexcept;
  ~ExportedProgram();

  GraphModule& graph_module() { return *graph_module_; }
  const GraphModule& graph_module() const { return *graph_module_; }
  Graph& graph() { return graph_module_->graph(); }
  const ExportGraphSignature& graph_signature() const { return signature_; }
  // Parameters and persistent buffers by their dotted names (`lin.weight`).
  const StateDict& state_dict() const { return state_dict_; }
  // Lifted tensor constants and non-persistent buffers.
  const StateDict& constants() const { return constants_; }
  // By symbol name (`s77`).
  const std::map<std::string, RangeConstraint>& range_constraints() const { return range_constraints_; }
  // How forward's (args, kwargs) flatten into the user inputs, and how the
  // user outputs rebuild its result: pytree TreeSpecs as torch.export
  // serializes them (treespec_dumps, `[1, {"type": "builtins.tuple", ...}]`).
  const std::string& in_spec() const;
  const std::string& out_spec() const;

  // Python's `ep.module()(*inputs)`: checks the user inputs against the
  // shapes the program was exported for (static sizes exactly, symbolic
  // sizes within their ranges and equal where the symbol is the same), runs
  // the graph with the lifted inputs, writes buffer and user-input mutations
  // back, and returns the user outputs in the structure forward returned
  // (a tensor, a tuple, a list, a dict). Nested inputs (a list of tensors)
  // are given as IValue lists or tuples. Throws fx::Error naming the input
  // and dimension that does not fit, and anything the graph throws.
  c10::IValue run(std::vector<c10::IValue> inputs);
  // The same on the user inputs flattened as the graph takes them (the
  // leaves of torch.utils._pytree.tree_leaves((args, kwargs)), one per
  // USER_INPUT spec), as tools that read a flat list of tensors have them.
  c10::IValue run_flat(std::vector<c10::IValue> user_inputs);

 private:
  struct Specs;
  std::unique_ptr<GraphModule> graph_module_;
  ExportGraphSignature signature_;
  StateDict state_dict_;
  StateDict constants_;
  std::map<std::string, RangeConstraint> range_constraints_;
  std::unique_ptr<Specs> specs_;
};

// Reads what torch.export.save of torch 2.14 writes: a PT2 archive
// (archive_format `pt2`) whose model `model` has serialized-schema major
// version 8 (any minor version up to the one this fxcpp knows, 8.20 for
// torch 2.14). Throws fx::LoadError naming the file and the place in it
// (`models/model.json: graph.nodes[3] ('linear').inputs[1]`) for a
// malformed, truncated or newer file, an unknown operator or a dangling
// name.
ExportedProgram load_exported(const std::string& path);
ExportedProgram load_exported_from_bytes(std::string_view bytes, const std::string& name = "<bytes>");

// torch.export.export's counterpart for a graph fxcpp captured
// (fx::capture): the ATen-level GraphModule as an ExportedProgram, its
// parameters, buffers and tensor attributes lifted into placeholders
// (`p_<path>`, `b_<path>`, `c_<path>`, before the user inputs, as torch.export
// orders them) with the graph signature saying which is which, its output
// flattened (the structure kept in out_spec). In-place updates stay in the
// graph, as in torch.export's training IR. Dynamic dimensions of the capture
// (CaptureOptions::dynamic_shapes) become the program's range constraints,
// so run() takes any size in range and refuses others. Every call_function
// must be a torch.ops operator, operator.getitem of one, or SymInt arithmetic
// (operator.add, sub, mul, floordiv), and every tensor value needs
// meta["tensor_meta"] (capture records it); otherwise throws fx::Error naming
// the node.
ExportedProgram to_exported_program(const GraphModule& captured);

// torch.export.save: writes the program as a PT2 archive that
// torch.export.load of torch 2.14 reads (serialized schema 8.20), and
// fx::load_exported too. cond and while_loop are written with their
// branches. A dynamic capture's sizes (CaptureOptions::dynamic_shapes) are
// written as torch.export writes symbolic ones, with the program's range
// constraints, where every size and stride is linear in the symbols or a
// product of two of them; otherwise, and for a loaded program's symbolic
// sizes, fx::Error names the node.
void save_exported(const ExportedProgram& ep, const std::string& path);

// torch.export.pt2_archive.is_pt2_package: whether `path` is a zip archive
// whose archive_format record says pt2 (false for anything else, unreadable
// files included).
bool is_pt2_package(const std::string& path);

}  // namespace fx
