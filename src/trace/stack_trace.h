#pragma once
// The C++ call stack of the code being traced, for node.meta["stack_trace"]
// (torch.fx records the Python stack when Tracer.record_stack_traces is set).

#include <string>

namespace fx::detail {

// The frames of the current call stack that belong to user code (not fxcpp,
// LibTorch or the standard library), innermost first, one per line as
// `  <function> (<binary>)`. Functions of an executable are named only when
// it exports its symbols (link with -rdynamic / ENABLE_EXPORTS) and the
// function has external linkage (not in an anonymous namespace); frames
// without a name are left out.
std::string user_stack_trace();

}  // namespace fx::detail
