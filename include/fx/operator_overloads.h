#pragma once
// The dispatcher's operators by name: every overload of `aten::add` (add.Tensor,
// add.Scalar, add.out, ...). One index, kept current by a registration
// listener, serves the runtime's overload choice, the C++ emitter and
// functionalization.

#include <ATen/core/dispatch/Dispatcher.h>

#include <string_view>
#include <vector>

namespace fx {

// Every registered overload of the operator `qualified` ("aten::add"), in the
// order they were registered; empty when there is none. An operator library
// loaded later is found. Thread-safe.
std::vector<c10::OperatorHandle> operator_overloads(std::string_view qualified);

// True for an operator whose result is a view of an argument: a return that
// aliases it without writing it (`Tensor(a)`: view, transpose, select,
// ...), as functionalization and the compiler both read it.
bool is_view_op(const c10::OperatorHandle& op);

}  // namespace fx
