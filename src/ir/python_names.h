#pragma once
// Python's rules for names, as torch.fx applies them.

#include <string>
#include <string_view>

namespace fx::detail {

bool is_python_keyword(std::string_view s);
// A name in Python 3.11's `builtins` module (what torch.fx's namespace refuses
// to shadow).
bool is_python_builtin(std::string_view s);
// str.isidentifier() for ASCII names (non-ASCII bytes count as letters).
bool is_identifier(std::string_view s);
// torch.fx.graph._snake_case: `pascalCase` -> `pascal_case`.
std::string snake_case(std::string_view s);

}  // namespace fx::detail
