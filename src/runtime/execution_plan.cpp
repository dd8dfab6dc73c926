// ExecutionPlan: building the steps from a graph, and running them.
#include "execution_plan.h"

#include "../ir/repr.h"
#include "../ir/visit.h"

#include <unordered_map>

namespace fx::runtime {

ExecutionPlan::ExecutionPlan(const Graph& graph, const std::vector<Node*>& order,
                             const Graph::LastUses& dies_at, const Lookup& lookup) {
  num_slots_ = order.size();
  // Room for the usual graph (mostly binary ops) without growing: growth
  // copies, and in this VM every fresh page costs ~12 us.
  steps_.reserve(order.size());
  args_.reserve(2 * order.size());
  site_slots_.reserve(2 * order.size());
  dead_.reserve(order.size());  // a value dies once
  const auto position = graph.positions(order);
  // A node's slot is its position; only the nodes inside nested arguments
  // (lists, dicts), read by slot at run time, are kept in slot_of_.
  auto slot = [&](const Node* n) {
    const auto p = position.of(n);
    if (!p) throw Error("node " + detail::quoted(n) + " is not in the compiled graph");
    return static_cast<int>(*p);
  };
  auto source = [&](const Argument& a) {
    ArgSource s;
    if (Node* n = a.node()) {
      s.slot = slot(n);
    } else {
      bool has_node = false;
      detail::visit_nodes(a, [&](Node* inner) {
        has_node = true;
        slot_of_.set(inner, static_cast<uint32_t>(slot(inner)));
      });
      if (has_node) {
        s.nested = static_cast<int>(nested_.size());
        nested_.push_back(a);
      } else {
        s.constant = to_ivalue(a);
      }
    }
    return s;
  };
  auto end_of = [](const auto& all) { return static_cast<uint32_t>(all.size()); };
  // Each target resolved once (the runtime's registry locks and hashes the name).
  std::unordered_map<const void*, std::shared_ptr<const Callable>> functions, methods;
  std::vector<SiteArg> site;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    try {
      switch (n->op()) {
        case Op::placeholder:
          inputs_.push_back(static_cast<int>(i));
          input_names_.push_back(n->target().str());
          defaults_.push_back(n->args().empty() ? std::nullopt : std::optional(to_ivalue(n->args()[0])));
          continue;
        case Op::output:
          output_ = source(n->args().at(0));
          continue;
        default:
          break;
      }
      Step step;
      step.node = n;
      step.out = static_cast<int>(i);
      step.args.begin = end_of(args_);
      if (n->op() == Op::get_attr)
        args_.push_back(ArgSource{-1, -1, lookup.attribute(*n)});
      else
        for (const auto& a : n->args()) args_.push_back(source(a));
      step.args.end = end_of(args_);
      step.kwargs.begin = end_of(kwargs_);
      for (const auto& [k, v] : n->kwargs()) kwargs_.emplace_back(k, source(v));
      step.kwargs.end = end_of(kwargs_);
      if (n->op() == Op::call_function || n->op() == Op::call_method) {
        auto& known = (n->op() == Op::call_function ? functions : methods)[n->target().entry()];
        if (!known)
          known = n->op() == Op::call_function ? resolve_function(n->target())
                                               : resolve_method(n->target().str());
        step.fn = known;
      }
      if (step.fn && n->kwargs().empty()) {
        site.clear();
        for (const auto& a : step.args.of(args_))
          if (a.nested < 0) site.push_back(SiteArg{a.slot, a.constant});
        if (site.size() == step.args.end - step.args.begin) step.fast = step.fn->specialized(site);
        if (step.fast) {
          step.site_slots.begin = end_of(site_slots_);
          for (const auto& a : site) site_slots_.push_back(a.slot);
          step.site_slots.end = end_of(site_slots_);
        }
      }
      if (n->op() == Op::call_module) step.module = lookup.module(*n);
      step.dead.begin = end_of(dead_);
      for (const Node* dead : dies_at[i]) dead_.push_back(slot(dead));
      // A value no node reads dies at once, as FX's generated code deletes
      // it (`getitem_4 = None`): the unused indices of a captured
      // max_pool2d_with_indices would otherwise live to the end of the call.
      if (n->num_users() == 0) dead_.push_back(slot(n));
      step.dead.end = end_of(dead_);
      steps_.push_back(std::move(step));
    } catch (const Error& e) {
      throw Error("node '" + n->name() + "' (" + std::string(op_name(n->op())) + " " + n->target().str() +
                  ") cannot run: " + e.what());
    }
  }
}

int ExecutionPlan::slot(const Node* n) const {
  const auto s = slot_of_.find(n);
  if (!s) throw Error("node " + detail::quoted(n) + " is not in the compiled graph");
  return static_cast<int>(*s);
}

c10::IValue ExecutionPlan::value_of(const ArgSource& s, const std::vector<c10::IValue>& slots) const {
  if (s.slot >= 0) return slots[s.slot];
  if (s.nested >= 0) return to_ivalue(nested_[s.nested], [&](const Node* n) { return slots[slot(n)]; });
  return s.constant;
}

c10::IValue ExecutionPlan::run(std::vector<c10::IValue> inputs, std::string_view module) const {
  if (inputs.size() > inputs_.size())
    throw Error(std::string(module) + ".forward takes " + std::to_string(inputs_.size()) + " input(s) but " +
                std::to_string(inputs.size()) + " were given");
  std::vector<c10::IValue> slots(num_slots_);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i < inputs.size())
      slots[inputs_[i]] = std::move(inputs[i]);
    else if (defaults_[i])
      slots[inputs_[i]] = *defaults_[i];
    else
      throw Error(std::string(module) + ".forward: missing input '" + input_names_[i] + "'");
  }
  auto free_dead = [&](const Step& step) {
    for (int d : step.dead.of(dead_)) slots[d] = c10::IValue();
  };
  for (const auto& step : steps_) {
    const auto args_of_step = step.args.of(args_);
    if (!step.fn && !step.module) {  // get_attr
      slots[step.out] = args_of_step[0].constant;
      continue;
    }
    if (step.fast) {
      bool done = false;
      try {
        done = step.fast->try_call(slots.data(), site_slots_.data() + step.site_slots.begin, slots[step.out]);
      } catch (const std::exception& e) {
        throw Error("error running node '" + step.node->name() + "' (" + step.node->format_node() +
                    "): " + e.what());
      }
      if (done) {
        free_dead(step);
        continue;
      }
    }
    std::vector<c10::IValue> args;
    args.reserve(args_of_step.size());
    for (const auto& a : args_of_step) args.push_back(value_of(a, slots));
    IValueKwargs kwargs;
    const auto kwargs_of_step = step.kwargs.of(kwargs_);
    kwargs.reserve(kwargs_of_step.size());
    for (const auto& [k, v] : kwargs_of_step) kwargs.emplace_back(k, value_of(v, slots));
    try {
      if (step.fn) {
        slots[step.out] = step.fn->call(std::move(args), std::move(kwargs));
      } else {
        std::vector<Value> vargs(args.begin(), args.end());
        ValueKwargs vkwargs;
        for (auto& [k, v] : kwargs) vkwargs.emplace_back(k, Value(std::move(v)));
        slots[step.out] = step.module->call(std::move(vargs), std::move(vkwargs)).ivalue();
      }
    } catch (const std::exception& e) {
      throw Error("error running node '" + step.node->name() + "' (" + step.node->format_node() +
                  "): " + e.what());
    }
    free_dead(step);
  }
  return value_of(output_, slots);
}

}  // namespace fx::runtime
