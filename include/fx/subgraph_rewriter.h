#pragma once
// fx::replace_pattern: torch.fx.replace_pattern (torch/fx/subgraph_rewriter.py).
// Finds every non-overlapping occurrence of a pattern in a GraphModule's
// graph and replaces each with a copy of a replacement graph.
//
//   // def pattern(w1, w2): return torch.cat([w1, w2]).sum()
//   fx::Pattern pattern({"w1", "w2"}, [](fx::Value w1, fx::Value w2) {
//     return fx::call("torch.cat", fx::Value::list({w1, w2})).sum();
//   });
//   // def replacement(w1, w2): return torch.stack([w1, w2])
//   fx::Pattern replacement({"w1", "w2"}, [](fx::Value w1, fx::Value w2) {
//     return fx::call("torch.stack", fx::Value::list({w1, w2}));
//   });
//   std::vector<fx::Match> matches = fx::replace_pattern(*gm, pattern, replacement);
//
// A pattern or replacement is an fx::Pattern, made from
// - a Graph or a GraphModule, used as it is (not copied; it must outlive the
//   call, and the returned matches, whose keys are its nodes);
// - an fx::Module, traced with fx::symbolic_trace (its submodules and
//   tensors become call_module / get_attr nodes, as a Python nn.Module's do);
// - a function of fx::Values with the names of its parameters, which are
//   the placeholders' names (Python takes them from the def), traced the
//   same way. It takes N fx::Value (N = the number of names, at most 8) or
//   one `const std::vector<fx::Value>&`, and returns an fx::Value (several
//   outputs: fx::Value::tuple({a, b})).
//
// The rules (as torch.fx's):
// - matching is by use-def edges, not names (see fx/passes/subgraph_matcher.h);
//   the pattern's placeholders match any value, and its output is matched by
//   value only: it need not be the graph's output;
// - the replacement takes as many inputs as the pattern (matched in order)
//   and returns as many values as the pattern returns nodes;
// - each match is replaced, in order, by a copy of the replacement inserted
//   before the first user of the matched returned nodes, whose uses then go
//   to the copy's outputs; the matched nodes are erased;
// - the get_attr / call_module targets the graph then needs and lacks are
//   copied from the replacement's module (a deep copy);
// - gm.recompile() at the end (the graph lints clean).
// Throws fx::Error, before changing anything, for a malformed pattern or a
// replacement whose number of inputs or outputs differs from the pattern's.

#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/module.h>
#include <fx/passes/subgraph_matcher.h>
#include <fx/value.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fx {

class Pattern {
 public:
  using Function = std::function<Value(const std::vector<Value>&)>;

  Pattern(const Graph& graph) : graph_(&graph) {}
  Pattern(GraphModule& gm) : gm_(&gm) {}
  Pattern(Module& module) : module_(&module) {}
  // A function traced with parameters named `params` (with defaults, as
  // fx::Module's forward parameters). Throws fx::Error if the function's
  // arity differs from the number of names.
  template <class F>
  Pattern(std::vector<Module::Param> params, F&& fn)
      : params_(std::move(params)), fn_(adapt(std::forward<F>(fn), params_.size())) {}

  // What the pattern is as a graph: `owner` keeps a traced graph alive and
  // holds the attributes its get_attr / call_module nodes name (nullptr for
  // a bare Graph).
  struct Resolved {
    std::shared_ptr<GraphModule> traced;
    const Graph* graph = nullptr;
    const GraphModule* owner = nullptr;
  };
  Resolved resolve() const;

 private:
  template <class F, size_t... I>
  static constexpr bool takes_values(std::index_sequence<I...>) {
    return std::is_invocable_r_v<Value, F&, decltype((void)I, std::declval<Value>())...>;
  }
  template <class F, size_t N = 0>
  static Function adapt_values(F fn, size_t names) {
    if constexpr (N > 8) {
      static_assert(
          N <= 8, "fx::Pattern: the function must take up to 8 fx::Value, or const std::vector<fx::Value>&");
      return {};
    } else if constexpr (takes_values<F>(std::make_index_sequence<N>())) {
      if (names != N) throw_arity(N, names);
      return [fn = std::move(fn)](const std::vector<Value>& a) mutable {
        return [&]<size_t... I>(std::index_sequence<I...>) { return Value(fn(a[I]...)); }
        (std::make_index_sequence<N>());
      };
    } else {
      return adapt_values<F, N + 1>(std::move(fn), names);
    }
  }
  template <class F>
  static Function adapt(F&& fn, size_t names) {
    using D = std::decay_t<F>;
    if constexpr (std::is_invocable_r_v<Value, D&, const std::vector<Value>&>)
      return Function(std::forward<F>(fn));
    else
      return adapt_values<D>(D(std::forward<F>(fn)), names);
  }
  [[noreturn]] static void throw_arity(size_t takes, size_t names);

  const Graph* graph_ = nullptr;
  GraphModule* gm_ = nullptr;
  Module* module_ = nullptr;
  std::vector<Module::Param> params_;
  Function fn_;
};

// torch.fx's Match: where the pattern matched. `anchor` and the keys of
// nodes_map are nodes of the pattern graph, which `pattern_graph` keeps alive
// when the pattern was traced; the values are the graph's (erased) nodes, or
// the literal a placeholder matched.
struct Match {
  Node* anchor = nullptr;
  std::unordered_map<const Node*, Argument> nodes_map;
  std::shared_ptr<const Graph> pattern_graph;
};

// torch.fx 2.x's ReplacedPatterns: a Match and the nodes its replacement
// added to the graph, in order.
struct ReplacedPatterns {
  Node* anchor = nullptr;
  std::unordered_map<const Node*, Argument> nodes_map;
  std::vector<Node*> replacements;
  std::shared_ptr<const Graph> pattern_graph;
};

// torch.fx 2.x's match filter: (match, original graph, pattern graph) -> keep?
using MatchFilter = std::function<bool(const passes::InternalMatch&, const Graph&, const Graph&)>;

std::vector<Match> replace_pattern(GraphModule& gm, const Pattern& pattern, const Pattern& replacement);

// torch.fx 2.x: replace_pattern, keeping only the matches every filter
// accepts; with ignore_literals, literal arguments of the pattern match any
// value.
std::vector<ReplacedPatterns> replace_pattern_with_filters(GraphModule& gm, const Pattern& pattern,
                                                           const Pattern& replacement,
                                                           const std::vector<MatchFilter>& match_filters = {},
                                                           bool ignore_literals = false);

}  // namespace fx
