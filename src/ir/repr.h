#pragma once
// Python's repr() and str() of argument values, as torch.fx prints them.

#include <fx/argument.h>

#include <string>
#include <string_view>
#include <vector>

namespace fx::detail {

// How a node is spelled inside a repr (its name, or its codegen name).
class NodeNamer {
 public:
  virtual ~NodeNamer() = default;
  // out += the node's name: most names are appended many times, and a
  // string returned for each would be copied again.
  virtual void append_name(std::string& out, const Node* n) const = 0;
};
// Spells each node by its graph name.
const NodeNamer& plain_names();

std::string repr_float(double d);
std::string repr_string(std::string_view s);
// The number of characters (code points) of UTF-8 text, as tabulate counts them.
size_t display_width(std::string_view s);
std::string repr_dtype(c10::ScalarType t);
std::string repr_layout(c10::Layout l);
std::string repr_memory_format(c10::MemoryFormat m);
std::string repr_device(const c10::Device& d);  // device(type='cpu')
std::string str_device(const c10::Device& d);   // cpu

// 'name': how error messages quote a node.
std::string quoted(const Node* n);
// (1, 2), (4,): a Python tuple of ints.
std::string repr_int_tuple(const std::vector<int64_t>& v);
// torch.nn.modules.module._addindent: indent every line but the first.
std::string add_indent(const std::string& s, size_t spaces);

// repr(a)
void append_repr(std::string& out, const Argument& a, const NodeNamer& names);
std::string repr(const Argument& a, const NodeNamer& names);
// str(a): differs from repr at the top level only (strings unquoted, devices short).
std::string str(const Argument& a, const NodeNamer& names);
// torch.fx.node._format_arg: the args/kwargs text of the graph printout.
void append_format_arg(std::string& out, const Argument& a);
void append_format_args(std::string& out, const Args& args);
void append_format_kwargs(std::string& out, const Kwargs& kwargs);

}  // namespace fx::detail
