#pragma once
// fx::Argument <-> JSON, as docs/format.md specifies (python/fxcpp/format.py
// is the same mapping in Python).
//
//   None null · bool true/false · int 3 · float 3.0 or {"float": "inf"} ·
//   str "s" · list [..] · tuple {"tuple": [..]} · dict {"dict": {..}} ·
//   Node {"node": "name"} · slice {"slice": [start, stop, step]} ·
//   Ellipsis {"ellipsis": null} · torch.dtype {"dtype": "torch.float32"} ·
//   torch.device {"device": "cpu"} · torch.layout {"layout": "torch.strided"} ·
//   torch.memory_format {"memory_format": "torch.channels_last"}

#include <fx/argument.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace fx::detail {

using Json = nlohmann::ordered_json;

// Throws fx::Error for what JSON cannot hold (an opaque constant), naming
// `where` (the node and argument it is part of).
Json argument_to_json(const Argument& a, const std::string& where);

// Resolves {"node": name}; throws when there is no such node before this one.
using NodeLookup = std::function<Node*(const std::string& name, const std::string& where)>;

// Throws fx::LoadError naming `where` (a path such as
// `graph.nodes[3] ('add_1').args[0]`) for anything that is not an argument.
Argument argument_from_json(const Json& j, const std::string& where, const NodeLookup& lookup);

// Throws fx::LoadError("<where>: <what>").
[[noreturn]] void load_error(const std::string& where, const std::string& what);

c10::ScalarType dtype_from_name(const std::string& name, const std::string& where);
c10::MemoryFormat memory_format_from_name(const std::string& name, const std::string& where);

}  // namespace fx::detail
