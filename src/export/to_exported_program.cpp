// fx::to_exported_program: a captured ATen graph as an ExportedProgram, its
// tensor attributes lifted into placeholders (exported_program.h).
#include <fx/capture.h>
#include <fx/exported_program.h>
#include <fx/passes/shape_prop.h>

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace fx {

namespace {

// torch.export's placeholder name for a lifted attribute: the prefix, then
// the path with dots as underscores (`lin.weight` -> `p_lin_weight`).
std::string lifted_name(const char* prefix, const std::string& path) {
  std::string name = std::string(prefix) + path;
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

using SpecJson = nlohmann::ordered_json;

// The Python operators an exported graph holds beside torch.ops: getitem of
// a multi-output operator, and SymInt arithmetic on sizes.
bool is_python_operator(const Target& t) {
  return t == "operator.getitem" || t == "operator.add" || t == "operator.sub" || t == "operator.mul" ||
         t == "operator.floordiv";
}

SpecJson leaf_spec() {
  return SpecJson{{"type", nullptr}, {"context", nullptr}, {"children_spec", SpecJson::array()}};
}

// The output's leaves, in order, and its pytree spec.
SpecJson flatten_output(const Argument& a, std::vector<Argument>& leaves) {
  auto node_of = [&](const char* type, std::string context, const std::vector<Argument>& items) {
    SpecJson children = SpecJson::array();
    for (const auto& item : items) children.push_back(flatten_output(item, leaves));
    return SpecJson{{"type", type}, {"context", std::move(context)}, {"children_spec", std::move(children)}};
  };
  if (const auto* t = std::get_if<Tuple>(&a.storage())) return node_of("builtins.tuple", "null", t->items);
  if (const auto* l = std::get_if<List>(&a.storage())) return node_of("builtins.list", "null", l->items);
  if (const auto* d = std::get_if<Dict>(&a.storage())) {
    SpecJson keys = SpecJson::array();
    std::vector<Argument> values;
    for (const auto& [k, v] : d->items) keys.push_back(k), values.push_back(v);
    return node_of("builtins.dict", keys.dump(), values);
  }
  leaves.push_back(a);
  return leaf_spec();
}

}  // namespace

ExportedProgram to_exported_program(const GraphModule& captured) {
  std::set<std::string> parameters;
  for (const auto& p : captured.named_parameters(/*recurse=*/true)) parameters.insert(p.key());
  std::set<std::string> buffers;
  for (const auto& b : captured.named_buffers(/*recurse=*/true)) buffers.insert(b.key());

  // The lifted attributes, in order of first use, as torch.export lifts them:
  // parameters, then buffers, then constants.
  struct Lifted {
    std::string path;
    InputSpec::Kind kind;
    Node* placeholder = nullptr;
  };
  std::vector<Lifted> lifted;
  std::unordered_map<std::string, size_t> by_path;
  for (Node* n : captured.graph().nodes()) {
    if (n->op() == Op::call_module)
      throw Error("to_exported_program: node '" + n->name() +
                  "' calls a module; export takes ATen graphs (fx::capture)");
    if (n->op() != Op::get_attr || by_path.count(n->target().str())) continue;
    if (dynamic_cast<const GraphModule*>(captured.get_submodule(n->target().str()))) continue;  // a branch
    const std::string& path = n->target().str();
    const auto kind = parameters.count(path) ? InputSpec::Kind::parameter
                      : buffers.count(path)  ? InputSpec::Kind::buffer
                                             : InputSpec::Kind::constant_tensor;
    by_path.emplace(path, lifted.size());
    lifted.push_back({path, kind});
  }
  std::stable_sort(lifted.begin(), lifted.end(),
                   [](const Lifted& a, const Lifted& b) { return a.kind < b.kind; });

  auto graph = std::make_unique<Graph>();
  ExportGraphSignature signature;
  StateDict state_dict, constants;
  std::unordered_map<std::string, Node*> placeholder_of;
  for (auto& l : lifted) {
    const char* prefix = l.kind == InputSpec::Kind::parameter ? "p_"
                         : l.kind == InputSpec::Kind::buffer  ? "b_"
                                                              : "c_";
    Node* p = graph->placeholder(lifted_name(prefix, l.path));
    at::Tensor t = captured.get_tensor(l.path);
    p->meta().set("tensor_meta", passes::extract_tensor_metadata(t));
    placeholder_of.emplace(l.path, p);
    signature.input_specs.push_back({l.kind, p->name(), l.path, true});
    (l.kind == InputSpec::Kind::constant_tensor ? constants : state_dict).emplace_back(l.path, t);
  }
  std::map<std::string, RangeConstraint> ranges;
  std::unordered_map<const Node*, Node*> env;
  std::map<std::string, GraphModule::Attr> submodules;
  SpecJson args_spec = SpecJson::array();
  Argument output;
  for (Node* n : captured.graph().nodes()) {
    switch (n->op()) {
      case Op::placeholder: {
        Node* p = graph->node_copy(*n, [](Node*) -> Argument { return None; });
        env.emplace(n, p);
        // Dynamic dimensions (CaptureOptions::dynamic_shapes): their ranges.
        if (const auto* dims = n->meta().get<std::map<std::string, Dim>>("sym_dims"))
          for (const auto& [symbol, dim] : *dims)
            ranges.emplace(symbol, RangeConstraint{dim.min, dim.max == std::numeric_limits<int64_t>::max()
                                                                ? std::nullopt
                                                                : std::optional<int64_t>(dim.max)});
        signature.input_specs.push_back({InputSpec::Kind::user_input, p->name(), "", true});
        args_spec.push_back(leaf_spec());
        break;
      }
      case Op::get_attr:
        if (auto* branch = dynamic_cast<GraphModule*>(captured.get_submodule(n->target().str()))) {
          // cond's and while_loop's branches stay submodules, read by get_attr.
          env.emplace(n, graph->node_copy(*n, [](Node*) -> Argument { return None; }));
          submodules.emplace(n->target().str(), GraphModule::Attr(std::shared_ptr<GraphModule>(
                                                    branch->shared_from_this(), branch)));
        } else {
          env.emplace(n, placeholder_of.at(n->target().str()));
        }
        break;
      case Op::output:
        output = n->args().at(0);
        break;
      case Op::call_function:
        if (!n->target().ops_name() && !is_python_operator(n->target()))
          throw Error("to_exported_program: node '" + n->name() + "' calls " + n->target().str() +
                      "; an exported program holds torch.ops operators (capture with fx::capture)");
        env.emplace(n, graph->node_copy(*n, [&](Node* in) -> Argument { return env.at(in); }));
        break;
      default:
        throw Error("to_exported_program: node '" + n->name() + "' is a " + std::string(op_name(n->op())) +
                    "; an exported program holds only call_function nodes");
    }
  }
  // The graph returns the output's leaves, flat; out_spec rebuilds it.
  std::vector<Argument> leaves;
  const SpecJson out_spec = flatten_output(output, leaves);
  std::vector<Argument> mapped;
  for (const auto& leaf : leaves) {
    Node* n = leaf.node();
    mapped.push_back(n ? Argument(env.at(n)) : leaf);
    signature.output_specs.push_back({OutputSpec::Kind::user_output, n ? env.at(n)->name() : "", ""});
  }
  graph->output(Tuple{std::move(mapped)});
  const SpecJson in_spec{
      1,
      {{"type", "builtins.tuple"},
       {"context", "null"},
       {"children_spec",
        {{{"type", "builtins.tuple"}, {"context", "null"}, {"children_spec", args_spec}},
         {{"type", "builtins.dict"}, {"context", "[]"}, {"children_spec", SpecJson::array()}}}}}};
  auto gm = std::make_unique<GraphModule>(submodules, std::move(graph));
  return ExportedProgram(std::move(gm), std::move(signature), std::move(state_dict), std::move(constants),
                         ranges, in_spec.dump(), SpecJson{1, out_spec}.dump());
}

}  // namespace fx
