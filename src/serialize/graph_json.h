#pragma once
// A Graph <-> the "graph" object of a GraphModule file (docs/format.md).

#include <fx/graph.h>

#include <memory>
#include <string>

#include "argument_json.h"

namespace fx::detail {

// {"nodes": [...]}: every node in order with its name, op, target, args,
// kwargs, type annotation and the meta entries the format holds
// (tensor_meta and plain str/bool/int/float values; others are left out).
// Throws fx::Error naming the node for an argument JSON cannot hold.
Json graph_to_json(const Graph& g);

// The graph of a "graph" object. Throws fx::LoadError naming the position
// (`graph.nodes[3] ('add_1').args[0]`) for anything malformed: unknown ops,
// duplicate names, uses before definition, a second output...
std::unique_ptr<Graph> graph_from_json(const Json& j);

}  // namespace fx::detail
