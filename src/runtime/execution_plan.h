#pragma once
// ExecutionPlan: a graph compiled for running on concrete values. Every
// target is resolved to its LibTorch callable once, each step's arguments are
// slots or precomputed constants, and each value is freed after its last use
// (Graph::last_uses). GraphModule builds one at recompile() and runs it for
// forward; the plan itself knows nothing of modules' trees: a Lookup gives it
// what get_attr and call_module nodes name.

#include <fx/graph.h>
#include <fx/module.h>
#include <fx/runtime.h>

#include "../ir/index_set.h"

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::runtime {

class ExecutionPlan {
 public:
  // What the graph's get_attr and call_module nodes name, looked up once
  // while the plan is built.
  struct Lookup {
    // A get_attr target's value: a tensor, or a whole submodule (cond's
    // branches) as a module_ivalue.
    std::function<c10::IValue(const Node&)> attribute;
    // A call_module target's module (shared, so that the plan keeps it alive
    // after delete_submodule).
    std::function<std::shared_ptr<Module>(const Node&)> module;
  };

  // `order` is the graph's nodes in order and `dies_at[i]` the values whose
  // last use is order[i] (Graph::last_uses). Throws fx::Error naming the
  // node that cannot run (an unknown target, a call_module target that is
  // not an fx::Module).
  ExecutionPlan(const Graph& graph, const std::vector<Node*>& order, const Graph::LastUses& dies_at,
                const Lookup& lookup);

  // Runs the graph on its placeholders' values (missing trailing ones take
  // their defaults). Errors about the inputs name `<module>.forward`.
  c10::IValue run(std::vector<c10::IValue> inputs, std::string_view module) const;

  // The placeholders' names and defaults, in order.
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::optional<c10::IValue>>& defaults() const { return defaults_; }

 private:
  // An argument of a step: a slot, a precomputed constant, or a container
  // holding slots (built at run time).
  struct ArgSource {
    int slot = -1;
    // >= 0: a container holding nodes, nested_[i] (a copy: the plan must not
    // depend on later graph edits).
    int nested = -1;
    c10::IValue constant;
  };
  // A range of one of the plan's flat arrays.
  struct Span {
    uint32_t begin = 0, end = 0;
    template <class T>
    std::span<const T> of(const std::vector<T>& all) const {
      return std::span<const T>(all.data() + begin, end - begin);
    }
  };
  struct Step {
    const Node* node = nullptr;
    std::shared_ptr<const Callable> fn;  // call_function / call_method
    std::shared_ptr<Module> module;      // call_module
    // fn's call specialized to this step's arguments (tried first; nullptr:
    // none, see Callable::specialize); site_slots holds those arguments' slots.
    std::shared_ptr<const SpecializedCall> fast;
    Span args, kwargs, site_slots, dead;  // dead: the slots to free after this step
    int out = -1;
  };

  int slot(const Node* n) const;  // of a node inside a nested argument
  c10::IValue value_of(const ArgSource& s, const std::vector<c10::IValue>& slots) const;

  // Every step's arguments, slots and dead values live in a few flat arrays:
  // a graph of 100k nodes compiles without 100k small allocations each.
  std::vector<int> inputs_;  // slots of the placeholders
  std::vector<std::optional<c10::IValue>> defaults_;
  std::vector<std::string> input_names_;
  std::vector<Step> steps_;
  std::vector<ArgSource> args_;
  std::vector<std::pair<std::string, ArgSource>> kwargs_;
  std::vector<int> site_slots_, dead_;
  std::vector<Argument> nested_;
  ArgSource output_;
  size_t num_slots_ = 0;
  detail::PointerIndexMap slot_of_;  // the nodes inside nested arguments, read by slot at run time
};

}  // namespace fx::runtime
