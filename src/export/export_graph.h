#pragma once
// torch.export's serialized graph (torch/_export/serde/schema.py, `Graph`)
// -> fx::GraphModule, as torch._export.serde.serialize.GraphModuleDeserializer
// builds it: the same node names, targets, args/kwargs split and order, the
// same getitem nodes for multiple outputs, subgraphs (cond's branches) as
// get_attr submodules made where their argument is read.

#include <fx/graph_module.h>

#include <memory>
#include <optional>
#include <string>

#include "../serialize/argument_json.h"  // Json, load_error

namespace fx::detail {

// torch.export's ScalarType enum (schema.py) as c10's; throws fx::LoadError
// naming `where` for a number that names no dtype.
c10::ScalarType export_scalar_type(const Json& j, const std::string& where);

// A Device ({"type": "cpu", "index": null}) as c10's; fx::LoadError naming
// `where` for a device c10 does not know.
c10::Device export_device(const Json& j, const std::string& where);

// A serialized TensorMeta's sizes and strides as a symbolic size each: a
// number, a symbol (`s77`), or, for a composite expression, sympy's srepr as
// the file has it.
std::vector<std::string> export_sym_sizes(const Json& sizes, const std::string& where);
// One of those sizes as a number, or nullopt for a symbol or expression.
std::optional<int64_t> static_size(const std::string& size);

// Builds the graph `g` (schema Graph) into a GraphModule. `input_names`
// names the placeholders of constant inputs (the signature's names); it may
// be empty for subgraphs. `where` prefixes every error (`models/model.json:
// graph_module.graph`). Throws fx::LoadError naming the node and argument.
std::unique_ptr<GraphModule> graph_module_from_export(const Json& g, const std::string& where,
                                                      const std::vector<std::string>& input_names);

}  // namespace fx::detail
