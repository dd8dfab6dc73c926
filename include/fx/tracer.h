#pragma once
// fx::Tracer: symbolic tracing of an fx::Module into a Graph, with torch.fx's
// semantics; subclass it to change how modules, attributes and values are
// recorded (FX's Tracer methods of the same names).
//
// Placeholders come from forward's parameters (with their defaults);
// parameters used are get_attr nodes (found by identity, one per parameter),
// buffers get a get_attr node per use, other tensors become `_tensor_constantN`
// attributes of the root (registered on it, as torch.fx sets them); leaf modules are call_module nodes and
// other modules are traced through.

#include <fx/graph.h>
#include <fx/module.h>
#include <fx/tree_spec.h>
#include <fx/value.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace fx {

namespace detail {
class ModulePaths;
}

// torch.fx's PH: in concrete_args, a leaf of a structure that stays an input.
struct PHType {};
inline constexpr PHType PH{};

// What concrete_args gives for one forward parameter (torch.fx's
// symbolic_trace(root, concrete_args)):
// - a value (bool, int, float, str, None, a tensor): the parameter is
//   specialized to it. The graph keeps an input `<name>_1` and asserts that
//   it equals the value (`torch._assert(<name>_1 == value, ...)`, or
//   `_assert_is_none` for None), while forward sees the value itself, so
//   control flow on it is static;
// - fx::PH: the parameter stays an input named `<name>_1`;
// - a list, tuple or dict of these (ConcreteArg::list / tuple / dict, or a
//   Value list / tuple / dict): each leaf is specialized in turn (`<name>_1`,
//   `<name>_2`, ...; a dict's in the order of its keys), and the graph takes
//   the flattened leaves while its module takes the structure
//   (Graph::pytree_info).
class ConcreteArg {
 public:
  ConcreteArg(PHType) : ph_(true) {}
  // The requires clause keeps ConcreteArg's copy and move constructors.
  template <class T>
  requires(std::is_constructible_v<Value, T&&> && !std::is_same_v<std::decay_t<T>, ConcreteArg>)
      // NOLINTNEXTLINE(bugprone-forwarding-reference-overload)
      ConcreteArg(T&& v)
      : value_(std::forward<T>(v)) {}
  static ConcreteArg list(std::vector<ConcreteArg> items) {
    return ConcreteArg(TreeSpec::Kind::list, std::move(items));
  }
  static ConcreteArg tuple(std::vector<ConcreteArg> items) {
    return ConcreteArg(TreeSpec::Kind::tuple, std::move(items));
  }
  // A dict with str keys, flattened in the order given (pytree's order).
  static ConcreteArg dict(std::vector<std::pair<std::string, ConcreteArg>> items) {
    ConcreteArg out(TreeSpec::Kind::dict, {});
    for (auto& [key, item] : items) {
      out.keys_.push_back(key);
      out.items_.push_back(std::move(item));
    }
    return out;
  }

 private:
  friend class Tracer;
  ConcreteArg(TreeSpec::Kind kind, std::vector<ConcreteArg> items) : kind_(kind), items_(std::move(items)) {}
  bool ph_ = false;
  Value value_;  // a leaf's value (when not ph_ and kind_ is leaf)
  TreeSpec::Kind kind_ = TreeSpec::Kind::leaf;
  std::vector<ConcreteArg> items_;  // a list's / tuple's / dict's items
  std::vector<std::string> keys_;   // a dict's keys, one per item
};
using ConcreteArgs = std::vector<std::pair<std::string, ConcreteArg>>;

class Tracer {
 public:
  Tracer();
  virtual ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Traces root.forward into a new graph: one placeholder per forward
  // parameter, then whatever forward does.
  // `concrete_args` specializes forward parameters by name (see
  // ConcreteArg); naming a parameter forward does not have throws TraceError.
  std::unique_ptr<Graph> trace(Module& root, const ConcreteArgs& concrete_args = {});

  // ---- overridable behaviour ----
  // Whether `m` is recorded as one call_module node. Default: fx::nn's
  // standard modules, except containers (Sequential, ModuleList, ModuleDict).
  virtual bool is_leaf_module(const Module& m, std::string_view qualified_name) const;
  // Calls `m`: a call_module node for a leaf, `forward()` traced through otherwise.
  virtual Value call_module(Module& m, const std::function<Value()>& forward, const std::vector<Value>& args,
                            const ValueKwargs& kwargs);
  // Turns a value used as an argument into a node argument: proxies become
  // their nodes, parameters/buffers get_attr nodes, other tensors constants.
  virtual Argument create_arg(const Value& v);
  virtual Node* create_node(Op op, Target target, Args args, Kwargs kwargs,
                            std::optional<std::string> name = std::nullopt,
                            std::optional<std::string> type = std::nullopt);
  // create_arg on every argument, then create_node: the recorded operation.
  virtual Value create_proxy(Op op, Target target, const std::vector<Value>& args, const ValueKwargs& kwargs,
                             std::optional<std::string> name = std::nullopt);
  // The qualified name of a submodule of the root; throws fx::TraceError if
  // `m` is not in the root's hierarchy.
  virtual std::string path_of_module(const Module& m) const;
  // A parameter of the root read as an attribute: a get_attr node (cached:
  // one node per parameter, as FX's parameter proxy cache).
  virtual Value getattr(std::string_view qualified_name, const at::Tensor& value);

  // torch.fx's record_stack_traces: when set, every node created gets
  // meta["stack_trace"], the C++ frames of the model code that made it
  // (named when the executable exports its symbols: -rdynamic).
  bool record_stack_traces = false;

  // The graph being recorded into. Throws fx::TraceError while no trace is
  // in progress (before trace(), or after it returned its graph).
  virtual Graph& graph();
  Module& root() { return *root_; }
  // The tracer running on this thread, or nullptr.
  static Tracer* current();
  // Whether `v` is or holds (in a list or tuple) a parameter of the module
  // being traced. Used in forward, a parameter is symbolic, whatever it is combined with:
  // `Value(scale).exp()` records get_attr scale and exp, as torch.fx's parameter proxies do, so the graph
  // follows the parameter after load_state_dict or an optimizer step. (Buffers and other tensors compute
  // eagerly when no proxy is involved, as in torch.fx, whose default tracer does not proxy buffers.)
  bool holds_parameter(const Value& v);

 private:
  Value concrete_placeholder(const Module::Param& param, const ConcreteArg& arg, int& count, TreeSpec& spec);
  // Fills the three tensor-name maps on the first tensor argument: a model
  // made of leaf modules never needs them.
  void index_tensors();
  // The interned target of m's path (remembered by m across traces).
  static Target module_target(const Module& m, std::string_view path);

  std::unique_ptr<Graph> graph_;
  Module* root_ = nullptr;
  bool tensors_indexed_ = false;
  std::unordered_map<const void*, std::string> param_names_;   // TensorImpl* -> qualified name
  std::unordered_map<const void*, std::string> buffer_names_;  // TensorImpl* -> qualified name
  std::unordered_map<const void*, Value> param_proxies_;
  std::unordered_map<const void*, std::string> constant_names_;
  size_t next_constant_ = 0;                           // no `_tensor_constantN` below it is free
  std::unique_ptr<detail::ModulePaths> module_paths_;  // named_modules(), by identity
};

// Tracer().trace(root, concrete_args) as a graph.
std::unique_ptr<Graph> symbolic_trace_graph(Module& root, const ConcreteArgs& concrete_args = {});

}  // namespace fx
