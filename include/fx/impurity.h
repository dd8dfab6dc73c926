#pragma once
// fx::Impurity: why a node must not be removed, merged or folded. This is the
// one purity rule of fxcpp: Node::impurity() answers it, and
// Graph::eliminate_dead_code, the DCE pass, CSE, constant folding and the
// subgraph rewriter all ask it.
//
//   if (node->is_impure()) continue;                  // keep it
//   fx::Impurity why = node->impurity();              // in_place, random, ...
//
// It holds every rule of torch.fx 2.14's Node.is_impure (placeholders and
// outputs; torch.fx's side-effectful functions such as torch._assert and the
// profiler ops; ATen overloads with a mutable schema; the random functions
// and ATen ops tagged nondeterministic_seeded) and goes further where
// torch.fx's own docstring says its coverage is bad: calls that write an
// argument without an ATen schema to say so (`x.add_(1)` as a call_method,
// torch.relu_, operator.iadd, `inplace=True`, `out=`), Python functions
// called for their effect (print), and modules that are random (a Dropout in
// training). torch.fx 2.14's Graph.eliminate_dead_code deletes an unused
// `x.add_(1)`; fxcpp keeps it, because deleting it changes what the program
// computes. docs/passes.md lists the rules.

#include <cstdint>
#include <functional>
#include <string_view>

namespace fx {

class Node;

enum class Impurity : uint8_t {
  none,
  side_effect,   // placeholder, output, torch.fx's side-effectful functions, register_side_effect
  in_place,      // mutates an argument: `x.add_(1)`, `torch.relu_`, operator.iadd/setitem,
                 // `inplace=True`, an `out=` argument, an ATen schema that writes an input
  random,        // consumes the RNG: torch.rand*, bernoulli, dropout in training, ...
  returns_none,  // called for its effect only: print, ATen ops returning nothing
};

std::string_view impurity_name(Impurity i);

// The values an in-place call writes: the nodes in its first argument
// (`self`) and in its `out=` argument. What CSE must not merge reads of, and
// const folding must not freeze.
void for_each_written_input(const Node& n, const std::function<void(Node*)>& fn);

}  // namespace fx
