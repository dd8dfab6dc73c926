// fx::ExportedProgram: the graph signature's semantics at run time
// (exported_program.h).
#include <fx/exported_program.h>

#include <fx/passes/shape_prop.h>

#include <c10/core/GradMode.h>

#include <unordered_map>

#include "export_graph.h"
#include "tree_spec_json.h"

namespace fx {

namespace {

const char* kind_name(InputSpec::Kind k) {
  switch (k) {
    case InputSpec::Kind::user_input:
      return "USER_INPUT";
    case InputSpec::Kind::parameter:
      return "PARAMETER";
    case InputSpec::Kind::buffer:
      return "BUFFER";
    case InputSpec::Kind::constant_tensor:
      return "CONSTANT_TENSOR";
    case InputSpec::Kind::custom_obj:
      return "CUSTOM_OBJ";
    case InputSpec::Kind::token:
      return "TOKEN";
    case InputSpec::Kind::constant_input:
      return "USER_INPUT";
  }
  return "";
}

const char* kind_name(OutputSpec::Kind k) {
  switch (k) {
    case OutputSpec::Kind::user_output:
      return "USER_OUTPUT";
    case OutputSpec::Kind::loss_output:
      return "LOSS_OUTPUT";
    case OutputSpec::Kind::buffer_mutation:
      return "BUFFER_MUTATION";
    case OutputSpec::Kind::gradient_to_parameter:
      return "GRADIENT_TO_PARAMETER";
    case OutputSpec::Kind::gradient_to_user_input:
      return "GRADIENT_TO_USER_INPUT";
    case OutputSpec::Kind::user_input_mutation:
      return "USER_INPUT_MUTATION";
    case OutputSpec::Kind::token:
      return "TOKEN";
    case OutputSpec::Kind::parameter_mutation:
      return "PARAMETER_MUTATION";
  }
  return "";
}

std::string range_text(const RangeConstraint& r) {
  return "[" + (r.min_val ? std::to_string(*r.min_val) : std::string("-int_oo")) + ", " +
         (r.max_val ? std::to_string(*r.max_val) : std::string("int_oo")) + "]";
}

}  // namespace

std::string ExportGraphSignature::to_string() const {
  std::string s = "\n# inputs\n";
  for (size_t i = 0; i < input_specs.size(); ++i) {
    const auto& in = input_specs[i];
    s += (i ? "\n" : "") + in.name + ": " + kind_name(in.kind);
    if (in.kind != InputSpec::Kind::user_input && in.kind != InputSpec::Kind::constant_input)
      s += " target='" + in.target + "'";
    if (in.kind == InputSpec::Kind::buffer) s += in.persistent ? " persistent=True" : " persistent=False";
  }
  s += "\n\n# outputs\n";
  for (size_t i = 0; i < output_specs.size(); ++i) {
    const auto& out = output_specs[i];
    s += (i ? "\n" : "") + out.name + ": " + kind_name(out.kind);
    if (!out.target.empty()) s += " target='" + out.target + "'";
  }
  return s + "\n";
}

// What run() needs, worked out once from the signature and the graph.
struct ExportedProgram::Specs {
  // One dimension of a user input as the program was exported: a size it
  // must have, or a symbol whose range (and equality with other uses) holds.
  struct Dim {
    std::optional<int64_t> size;
    std::string symbol;  // empty: an expression fxcpp does not check
  };
  struct Input {
    std::string name;
    bool is_tensor = false;
    std::optional<std::vector<Dim>> dims;  // unknown when the file gave no metadata
  };
  std::vector<Input> user_inputs;
  // Per placeholder: the lifted tensor, or nothing for a user input.
  std::vector<std::optional<at::Tensor>> lifted;
  // Per output spec that writes back (a mutation): the lifted tensor it
  // writes, or the user input (its position among them); nothing when no
  // input has the name it gives.
  struct WriteBack {
    std::optional<at::Tensor> lifted;
    std::optional<size_t> user_input;
  };
  std::vector<WriteBack> write_backs;
  TreeSpec in_spec, out_spec;
  std::string in_spec_text, out_spec_text;
};

ExportedProgram::ExportedProgram(std::unique_ptr<GraphModule> graph_module, ExportGraphSignature signature,
                                 StateDict state_dict, StateDict constants,
                                 std::map<std::string, RangeConstraint> range_constraints,
                                 std::string in_spec, std::string out_spec)
    : graph_module_(std::move(graph_module)),
      signature_(std::move(signature)),
      state_dict_(std::move(state_dict)),
      constants_(std::move(constants)),
      range_constraints_(std::move(range_constraints)),
      specs_(std::make_unique<Specs>()) {
  std::vector<Node*> placeholders;
  for (Node* n : graph_module_->graph().nodes())
    if (n->op() == Op::placeholder) placeholders.push_back(n);
  if (placeholders.size() != signature_.input_specs.size())
    throw LoadError("the graph signature has " + std::to_string(signature_.input_specs.size()) +
                    " input specs for " + std::to_string(placeholders.size()) + " placeholders");
  auto index = [](const StateDict& d) {
    std::unordered_map<std::string_view, const at::Tensor*> by_key;
    for (const auto& [k, t] : d) by_key.emplace(k, &t);  // the first of a repeated key, as a search finds
    return by_key;
  };
  const auto weights = index(state_dict_), constant_tensors = index(constants_);
  auto find = [](const auto& by_key, const std::string& key) -> const at::Tensor* {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : it->second;
  };
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const InputSpec& spec = signature_.input_specs[i];
    if (placeholders[i]->name() != spec.name)
      throw LoadError("input spec " + std::to_string(i) + " names '" + spec.name + "' but placeholder " +
                      std::to_string(i) + " is '" + placeholders[i]->name() + "'");
    switch (spec.kind) {
      case InputSpec::Kind::user_input:
      case InputSpec::Kind::constant_input: {
        Specs::Input in{spec.name, false, std::nullopt};
        // sym_sizes first: a dynamic capture's placeholders have both,
        // tensor_meta with the example's sizes.
        if (const auto* sizes = placeholders[i]->meta().get<std::vector<std::string>>("sym_sizes")) {
          in.is_tensor = true;
          in.dims.emplace();
          for (const std::string& s : *sizes) {
            Specs::Dim d{detail::static_size(s), {}};
            if (!d.size && range_constraints_.count(s)) d.symbol = s;
            in.dims->push_back(d);
          }
        } else if (const auto* m = placeholders[i]->meta().get<passes::TensorMetadata>("tensor_meta")) {
          in.is_tensor = true;
          in.dims.emplace();
          for (int64_t s : m->shape) in.dims->push_back(Specs::Dim{s, {}});
        }
        specs_->user_inputs.push_back(std::move(in));
        specs_->lifted.emplace_back();
        break;
      }
      case InputSpec::Kind::parameter:
      case InputSpec::Kind::buffer:
      case InputSpec::Kind::constant_tensor: {
        const at::Tensor* t = spec.kind == InputSpec::Kind::parameter ||
                                      (spec.kind == InputSpec::Kind::buffer && spec.persistent)
                                  ? find(weights, spec.target)
                                  : find(constant_tensors, spec.target);
        if (!t && spec.kind == InputSpec::Kind::buffer)
          t = find(spec.persistent ? constant_tensors : weights, spec.target);
        if (!t)
          throw LoadError("input '" + spec.name + "' is " + kind_name(spec.kind) + " '" + spec.target +
                          "', which the file's weights and constants do not hold");
        specs_->lifted.emplace_back(*t);
        break;
      }
      default:
        throw LoadError(std::string("input '") + spec.name + "' is a " + kind_name(spec.kind) +
                        " input, which fxcpp does not run");
    }
  }
  for (const OutputSpec& out : signature_.output_specs) {
    Specs::WriteBack& wb = specs_->write_backs.emplace_back();
    const bool input = out.kind == OutputSpec::Kind::user_input_mutation;
    if (!input && out.kind != OutputSpec::Kind::buffer_mutation &&
        out.kind != OutputSpec::Kind::parameter_mutation)
      continue;
    size_t user = 0;
    for (size_t k = 0; k < signature_.input_specs.size(); ++k) {
      const InputSpec& in = signature_.input_specs[k];
      if (input ? in.name == out.target : in.target == out.target) {
        if (specs_->lifted[k])
          wb.lifted = specs_->lifted[k];
        else
          wb.user_input = user;
        break;
      }
      if (!specs_->lifted[k]) ++user;
    }
  }
  specs_->in_spec = detail::parse_tree_spec(in_spec, "in_spec");
  specs_->out_spec = detail::parse_tree_spec(out_spec, "out_spec");
  specs_->in_spec_text = std::move(in_spec);
  specs_->out_spec_text = std::move(out_spec);
}

const std::string& ExportedProgram::in_spec() const { return specs_->in_spec_text; }
const std::string& ExportedProgram::out_spec() const { return specs_->out_spec_text; }

ExportedProgram::ExportedProgram(ExportedProgram&&) noexcept = default;
ExportedProgram& ExportedProgram::operator=(ExportedProgram&&) noexcept = default;
ExportedProgram::~ExportedProgram() = default;

c10::IValue ExportedProgram::run(std::vector<c10::IValue> inputs) {
  const Specs& specs = *specs_;
  // (args, kwargs): the positional arguments, then the keyword arguments'
  // values in the order forward was exported with.
  std::vector<c10::IValue> flat;
  detail::flatten_inputs(specs.in_spec, inputs, flat);
  return run_flat(std::move(flat));
}

c10::IValue ExportedProgram::run_flat(std::vector<c10::IValue> flat) {
  const Specs& specs = *specs_;
  if (flat.size() != specs.user_inputs.size())
    throw Error("ExportedProgram.run: the program takes " + std::to_string(specs.user_inputs.size()) +
                " user input value(s), the arguments given hold " + std::to_string(flat.size()));
  std::unordered_map<std::string, std::pair<int64_t, std::string>> symbol_value;
  for (size_t i = 0; i < flat.size(); ++i) {
    const Specs::Input& in = specs.user_inputs[i];
    if (!in.is_tensor || !in.dims) continue;
    const std::string who = "input '" + in.name + "'";
    auto error = [](const std::string& what) { return Error("ExportedProgram.run: " + what); };
    if (!flat[i].isTensor()) throw error(who + " must be a tensor, got " + flat[i].tagKind());
    const at::Tensor& t = flat[i].toTensor();
    if (t.dim() != static_cast<int64_t>(in.dims->size()))
      throw error(who + " has " + std::to_string(t.dim()) + " dimensions; the program was exported with " +
                  std::to_string(in.dims->size()));
    for (size_t d = 0; d < in.dims->size(); ++d) {
      const Specs::Dim& dim = (*in.dims)[d];
      const int64_t got = t.size(static_cast<int64_t>(d));
      const std::string where = who + " dimension " + std::to_string(d);
      if (dim.size && got != *dim.size)
        throw error(where + " is " + std::to_string(got) + "; the program was exported for " +
                    std::to_string(*dim.size) + " (mark the dimension dynamic in torch.export to vary it)");
      if (dim.symbol.empty()) continue;
      const RangeConstraint& r = range_constraints_.at(dim.symbol);
      if ((r.min_val && got < *r.min_val) || (r.max_val && got > *r.max_val))
        throw error(where + " is " + std::to_string(got) + ", outside the range " + range_text(r) + " of " +
                    dim.symbol);
      auto [it, fresh] = symbol_value.emplace(dim.symbol, std::pair(got, where));
      if (!fresh && it->second.first != got)
        throw error(where + " is " + std::to_string(got) + " but " + it->second.second + " is " +
                    std::to_string(it->second.first) + ", and both are " + dim.symbol);
    }
  }
  std::vector<c10::IValue> all;
  all.reserve(specs.lifted.size());
  size_t next_user = 0;
  for (const auto& lifted : specs.lifted) all.push_back(lifted ? c10::IValue(*lifted) : flat[next_user++]);
  c10::IValue result = graph_module_->run(std::move(all));
  std::vector<c10::IValue> outputs;
  if (result.isTuple())
    outputs = result.toTupleRef().elements().vec();
  else
    outputs.push_back(std::move(result));
  if (outputs.size() != signature_.output_specs.size())
    throw Error("ExportedProgram.run: the graph returned " + std::to_string(outputs.size()) + " values for " +
                std::to_string(signature_.output_specs.size()) + " output specs");
  std::vector<c10::IValue> user_outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputSpec& spec = signature_.output_specs[i];
    switch (spec.kind) {
      case OutputSpec::Kind::user_output:
      case OutputSpec::Kind::loss_output:
        user_outputs.push_back(std::move(outputs[i]));
        break;
      case OutputSpec::Kind::buffer_mutation:
      case OutputSpec::Kind::parameter_mutation:
      case OutputSpec::Kind::user_input_mutation: {
        // The functional graph returns the new value; the module's state (or
        // the caller's tensor) takes it, as torch.export's unlifted module does.
        const Specs::WriteBack& wb = specs.write_backs[i];
        at::Tensor target;
        if (wb.lifted)
          target = *wb.lifted;
        else if (wb.user_input && flat[*wb.user_input].isTensor())
          target = flat[*wb.user_input].toTensor();
        if (!target.defined() || !outputs[i].isTensor())
          throw Error("ExportedProgram.run: output '" + spec.name + "' mutates '" + spec.target +
                      "', which is no input of the program");
        c10::NoGradGuard no_grad;
        try {
          target.copy_(outputs[i].toTensor());
        } catch (const c10::Error& e) {
          throw Error("ExportedProgram.run: writing output '" + spec.name + "' back into '" + spec.target +
                      "' failed: " + e.what_without_backtrace());
        }
        break;
      }
      default:
        break;
    }
  }
  return detail::unflatten_outputs(specs.out_spec, user_outputs);
}

}  // namespace fx
