#pragma once
// fx::Interpreter: runs a GraphModule's graph node by node, as torch.fx's
// Interpreter does; subclass it and override the method of an opcode to
// change what that kind of node does (e.g. record shapes, swap functions).
//
//   struct Count : fx::Interpreter {
//     using fx::Interpreter::Interpreter;
//     int calls = 0;
//     fx::Value call_function(fx::Target t, const std::vector<fx::Value>& a, const fx::ValueKwargs& k)
//     override {
//       ++calls;
//       return fx::Interpreter::call_function(t, a, k);
//     }
//   };
//
// Values are fx::Values, so the same interpreter runs on concrete values or,
// fed symbolic ones, re-records the graph (what fx::Transformer builds on).

#include <fx/graph.h>
#include <fx/value.h>

#include <unordered_map>
#include <vector>

namespace fx {

class GraphModule;

class Interpreter {
 public:
  explicit Interpreter(GraphModule& module, bool garbage_collect_values = true);
  virtual ~Interpreter() = default;

  // Runs the graph on `args` (one per placeholder; missing trailing ones take
  // the placeholder's default) and returns the output value. An error in a
  // node is rethrown with "While executing <the node>" added, as torch.fx does.
  Value run(std::vector<Value> args);
  // Runs one node: fetches its arguments from the environment and calls the
  // method of its opcode.
  virtual Value run_node(Node* n);

  virtual Value placeholder(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);
  virtual Value get_attr(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);
  virtual Value call_function(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);
  virtual Value call_method(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);
  virtual Value call_module(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);
  virtual Value output(Target target, const std::vector<Value>& args, const ValueKwargs& kwargs);

  // A node's args and kwargs with every node replaced by its value.
  std::pair<std::vector<Value>, ValueKwargs> fetch_args_kwargs_from_env(const Node* n) const;
  // The parameter, buffer or tensor attribute at a dotted path of the
  // module, or the submodule there (a cond branch, as a value).
  Value fetch_attr(std::string_view target) const;

  GraphModule& module() { return module_; }
  // Values of the nodes run so far (dead ones are dropped when garbage
  // collection is on).
  std::unordered_map<const Node*, Value> env;

 protected:
  Value load_arg(const Argument& a) const;

 private:
  Value run_node_naming_it(Node* n);

  GraphModule& module_;
  bool garbage_collect_;
  std::vector<Value> pending_args_;  // run()'s inputs, consumed by placeholder()
  bool symbolic_ = false;            // run() was given symbolic inputs (retracing)
  size_t next_arg_ = 0;
};

}  // namespace fx
