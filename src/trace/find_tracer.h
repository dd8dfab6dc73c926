#pragma once
// Which trace, if any, a call's arguments belong to.

#include <fx/value.h>

#include <vector>

namespace fx::detail {

// The tracer of the first symbolic value inside `v` (or the arguments), or
// nullptr when everything is concrete.
Tracer* find_tracer(const Value& v);
Tracer* find_tracer(const std::vector<Value>& args, const ValueKwargs& kwargs);

}  // namespace fx::detail
