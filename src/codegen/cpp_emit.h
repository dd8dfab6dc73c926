#pragma once
// The C++ `forward` of a GraphModule, statement by statement (cpp_emit.cpp),
// for export_cpp (cpp_export.cpp). Internal to src/codegen.
//
// Every value has a static C++ kind, known from what produced it: a
// placeholder is a tensor (or its default's kind), an ATen call returns what
// its schema says, a leaf module returns a tensor. Python semantics that
// C++ spells differently (int floor division, getitem on a tuple, x.shape)
// are chosen from these kinds.

#include <fx/graph_module.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fx::codegen {

enum class Kind { tensor, integer, real, boolean, int_list, tensor_list, tuple, none, str, dtype, device };

// An expression and its kind (a tuple's item kinds in `items`).
struct CppValue {
  std::string expr;
  Kind kind = Kind::tensor;
  std::vector<Kind> items;
};

// The C++ type a variable of kind `k` is declared with.
std::string cpp_type(Kind k);

// A parameter/buffer the generated code reads: its dotted name in the
// weights file and the member of the generated class holding it.
struct Weight {
  std::string path;
  std::string member;
  at::Tensor tensor;
};

struct CppForward {
  std::vector<std::pair<std::string, Kind>> params;  // forward's parameters: C++ name, kind
  std::vector<std::string> param_names;              // the placeholders' names (for messages)
  std::string return_type;                           // at::Tensor or c10::IValue
  std::string body;                                  // the statements, indented by two spaces
  std::vector<Weight> weights;                       // in order of first use
};

class Emitter;
// Writes the call_function nodes whose targets are not Python's or ATen's
// (fx::compile's kernels): their value, or nothing for a target it does not
// know.
using ExtraCalls = std::function<std::optional<CppValue>(Emitter&, const Node*)>;

// Throws fx::Error naming the node for a target (or a use of it) with no C++
// spelling here.
CppForward emit_forward(const GraphModule& gm, const ExtraCalls& extra = {});

// Unique C++ identifiers made from Python names, O(1) per name.
class CppNames {
 public:
  CppNames();
  // `want` sanitized (non-identifier characters to '_'), keywords and taken
  // names suffixed with _1, _2, ...
  std::string make(const std::string& want);

 private:
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, size_t> next_suffix_;
};

// C++ literals.
std::string cpp_string(const std::string& s);
std::string cpp_double(double d);
std::string cpp_dtype(c10::ScalarType t);
// An int list argument: `{2, 2}`; `at::IntArrayRef{0, 0}` when the first item
// is a literal 0, which could also start a c10::string_view(const char*,
// size_t) and make the call ambiguous (conv2d's padding="same" overload).
std::string cpp_int_list(const std::vector<std::string>& items);
// Items separated by `sep`: a call's arguments.
std::string join(const std::vector<std::string>& parts, const std::string& sep = ", ");

// The C++ of a torch.nn.functional.<f> call (cpp_functional.cpp).
CppValue emit_functional(Emitter& e, const Node* n, const std::string& f);

// The statements for one call_module node of a module with traits that
// write C++ (cpp_modules.cpp; fx/nn/module_traits.h).
CppValue emit_module_call(Emitter& e, const Node* n, const torch::nn::Module& m);

// torch.ops.higher_order.cond and while_loop (cpp_control_flow.cpp): an `if`
// and a `while` around their subgraphs' statements. The result is a variable
// the statements declare, a std::vector<at::Tensor>.
bool is_control_flow(const Node& n);
CppValue emit_control_flow(Emitter& e, const Node* n);

// What emit_module_call needs from the emitter.
class Emitter {
 public:
  virtual ~Emitter() = default;
  // The value of an argument (a node's variable or a constant).
  virtual CppValue value(const Argument& a) = 0;
  // The member holding the tensor at a dotted path of the GraphModule.
  virtual std::string weight(const std::string& path) = 0;
  // A line before the node's statement (a comment, a temporary).
  virtual void line(const std::string& text) = 0;
  // A fresh local name derived from `base`.
  virtual std::string temp(const std::string& base) = 0;
  // Lines from now on are indented by `levels` more (or fewer) braces.
  virtual void indent(int levels) = 0;
  // The statements of the subgraph at `path` (a GraphModule the graph reads
  // with get_attr, for node `n`), written here with its placeholders bound
  // to `inputs`; returns the values it outputs (a tuple's items one by one).
  virtual std::vector<CppValue> inline_graph(const Node* n, const std::string& path,
                                             const std::vector<CppValue>& inputs) = 0;
  // Throws the fx::Error of a node (nullptr: the graph) that cannot be written.
  [[noreturn]] static void fail(const Node* n, const std::string& why);
};

}  // namespace fx::codegen
