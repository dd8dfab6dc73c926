// torch.ops.higher_order.cond and while_loop in C++: the branches' statements
// inline, so that the exported forward reads as the program does —
//
//   std::vector<at::Tensor> cond;
//   if (gt.item<bool>()) {
//     at::Tensor sin = at::sin(x);
//     cond = {sin};
//   } else {
//     ...
//   }
//
//   std::vector<at::Tensor> while_loop = {x, y};
//   while (true) {
//     at::Tensor lt = at::lt(while_loop[0], 10);
//     if (!lt.item<bool>()) break;
//     at::Tensor add = at::add(while_loop[0], 1);
//     while_loop = {add, while_loop[1]};
//   }
//
// Each subgraph's placeholders stand for the operands themselves (no copy);
// its variables are named apart from the forward's, which they never shadow.
#include <fx/graph_module.h>

#include "cpp_emit.h"

namespace fx::codegen {

namespace {

const std::string kCond = "torch.ops.higher_order.cond";
const std::string kWhileLoop = "torch.ops.higher_order.while_loop";

// The path of the subgraph argument `i` of `n`.
std::string subgraph(const Node* n, size_t i) {
  const Argument& a = n->args().at(i);
  if (!a.is_node() || a.node()->op() != Op::get_attr)
    Emitter::fail(n, "takes a get_attr of a GraphModule as argument " + std::to_string(i));
  return a.node()->target().str();
}

// The items of a tuple or list argument, each as a value.
std::vector<CppValue> operands(Emitter& e, const Node* n, size_t i) {
  const Argument& a = n->args().at(i);
  const auto* tuple = std::get_if<Tuple>(&a.storage());
  const auto* list = std::get_if<List>(&a.storage());
  if (!tuple && !list) Emitter::fail(n, "takes its operands as a tuple (argument " + std::to_string(i) + ")");
  std::vector<CppValue> out;
  for (const Argument& item : tuple ? tuple->items : list->items) out.push_back(e.value(item));
  return out;
}

// `{a, b}` of tensor values.
std::string tensors(const Node* n, const std::vector<CppValue>& values, const std::string& what) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind != Kind::tensor)
      Emitter::fail(
          n, what + " value " + std::to_string(i) + " that is not a tensor; export_cpp carries tensors");
    s += (i ? ", " : "") + values[i].expr;
  }
  return s + "}";
}

// A predicate as a C++ bool: a one-element tensor's value, or a bool.
std::string truth(const Node* n, const CppValue& v) {
  if (v.kind == Kind::tensor) return v.expr + ".item<bool>()";
  if (v.kind == Kind::boolean) return v.expr;
  Emitter::fail(n, "tests a value that is neither a tensor nor a bool");
}

CppValue cond(Emitter& e, const Node* n) {
  if (n->args().size() != 4 || !n->kwargs().empty())
    Emitter::fail(n, "takes (pred, true_graph, false_graph, operands)");
  const std::string test = truth(n, e.value(n->args()[0]));
  const std::vector<CppValue> in = operands(e, n, 3);
  const std::string name = e.temp(n->name());
  e.line("std::vector<at::Tensor> " + name + ";");
  e.line("if (" + test + ") {");
  for (size_t branch : {1, 2}) {
    if (branch == 2) e.line("} else {");
    e.indent(1);
    e.line(name + " = " +
           tensors(n, e.inline_graph(n, subgraph(n, branch), in), "has a branch that returns a") + ";");
    e.indent(-1);
  }
  e.line("}");
  return {name, Kind::tensor_list, {}};
}

CppValue while_loop(Emitter& e, const Node* n) {
  if (n->args().size() != 4 || !n->kwargs().empty())
    Emitter::fail(n, "takes (cond_graph, body_graph, carried_inputs, additional_inputs)");
  const std::vector<CppValue> carried = operands(e, n, 2), additional = operands(e, n, 3);
  const std::string name = e.temp(n->name());
  e.line("std::vector<at::Tensor> " + name + " = " + tensors(n, carried, "carries a") + ";");
  // The subgraphs read the carried values as they are at each iteration.
  std::vector<CppValue> in;
  for (size_t i = 0; i < carried.size(); ++i)
    in.push_back({name + "[" + std::to_string(i) + "]", Kind::tensor, {}});
  in.insert(in.end(), additional.begin(), additional.end());
  e.line("while (true) {");
  e.indent(1);
  const std::vector<CppValue> go = e.inline_graph(n, subgraph(n, 0), in);
  if (go.size() != 1)
    Emitter::fail(n, "has a condition that returns " + std::to_string(go.size()) + " values");
  e.line("if (!" + truth(n, go[0]) + ") break;");
  const std::vector<CppValue> next = e.inline_graph(n, subgraph(n, 1), in);
  if (next.size() != carried.size())
    Emitter::fail(n, "has a body that returns " + std::to_string(next.size()) + " values for " +
                         std::to_string(carried.size()) + " carried");
  e.line(name + " = " + tensors(n, next, "has a body that returns a") + ";");
  e.indent(-1);
  e.line("}");
  return {name, Kind::tensor_list, {}};
}

}  // namespace

bool is_control_flow(const Node& n) {
  return n.op() == Op::call_function && (n.target().str() == kCond || n.target().str() == kWhileLoop);
}

CppValue emit_control_flow(Emitter& e, const Node* n) {
  return n->target().str() == kCond ? cond(e, n) : while_loop(e, n);
}

}  // namespace fx::codegen
