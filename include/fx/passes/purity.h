#pragma once
// fx::passes::impurity: why a node must not be removed or merged.
//
// torch.fx 1.13's Node.is_impure (fx::Node::is_impure, kept faithful) knows
// only placeholders, outputs, torch._assert, the profiler ops and modules
// marked impure. It calls `x.add_(1)`, `torch.relu_(x)`, `operator.iadd`,
// `torch.rand(3)` and `print(x)` pure, so Graph::eliminate_dead_code deletes
// them when their result is unused, changing what the program does. The
// passes of fxcpp (DCE, CSE, const_fold) ask this header instead:
//
//   if (fx::passes::is_impure(*node)) continue;              // keep it
//   fx::passes::Impurity why = fx::passes::impurity(*node);  // in_place, random, ...
//
// Later torch.fx (2.x) moved the same way: Node.is_impure also treats ATen
// ops with a mutable schema, and with impure_random those tagged
// nondeterministic_seeded, as impure. docs/passes.md lists the rules.

#include <fx/node.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace torch::nn {
class Module;
}

namespace fx::passes {

enum class Impurity : uint8_t {
  none,
  side_effect,   // fx::Node::is_impure (torch.fx 1.13's rule)
  in_place,      // mutates an argument: `x.add_(1)`, `torch.relu_`, operator.iadd/setitem,
                 // `inplace=True`, an `out=` argument, an ATen schema that writes an input
  random,        // consumes the RNG: torch.rand*, bernoulli, dropout in training, ...
  returns_none,  // called for its effect only: print, ATen ops returning nothing
};

// Why `n` is impure (the first rule that applies), or Impurity::none.
// call_module nodes are looked up in the graph's owning module when it is a
// GraphModule (a torch.nn.Dropout in training mode is random).
Impurity impurity(const Node& n);
inline bool is_impure(const Node& n) { return impurity(n) != Impurity::none; }

std::string_view impurity_name(Impurity i);

// impurity() for a pass that visits many nodes of one graph: what a
// call_function target is (its name decides, but for a dropout's training
// argument) and each call_module target's module are found once per
// interned target, not once per node.
class PurityCache {
 public:
  Impurity impurity(const Node& n);
  bool is_impure(const Node& n) { return impurity(n) != Impurity::none; }

 private:
  struct Targets {
    std::unordered_map<Target, std::optional<Impurity>> functions;  // nullopt: the arguments decide
    std::unordered_map<Target, const torch::nn::Module*> modules;
  };
  // `cache`: what is known of targets already, or nullptr (the free impurity()).
  static Impurity impurity_of(const Node& n, Targets* cache);
  friend Impurity passes::impurity(const Node& n);

  Targets targets_;
};

}  // namespace fx::passes
