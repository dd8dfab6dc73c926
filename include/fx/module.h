#pragma once
// fx::Module: the nn.Module of fxcpp.
//
// A torch::nn::Module (parameters, buffers, submodules, named_*, train/eval,
// to(), state_dict keys as in PyTorch) whose forward takes and returns
// fx::Values, so that the same code runs eagerly and traces:
//
//   struct MyModel : fx::Module {
//     torch::Tensor param;
//     std::shared_ptr<fx::nn::Linear> linear;
//     MyModel() : fx::Module("MyModel", {"x"}) {
//       param = register_parameter("param", torch::rand({3, 4}));
//       linear = register_module("linear", std::make_shared<fx::nn::Linear>(4, 5));
//     }
//     fx::Value forward(const std::vector<fx::Value>& in) override {
//       return (*linear)(in[0] + param).clamp(fx::kw("min", 0.0), fx::kw("max", 1.0));
//     }
//   };
//
// The names given to the constructor are forward's parameters: they become
// the graph's placeholders, with their default values.

#include <fx/impurity.h>
#include <fx/value.h>

#include <torch/nn/module.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fx {

class Module : public torch::nn::Module {
 public:
  struct Param {
    Param(const char* n) : name(n) {}
    Param(std::string n) : name(std::move(n)) {}
    Param(std::string n, Value default_val) : name(std::move(n)), default_value(std::move(default_val)) {}
    std::string name;
    std::optional<Value> default_value;
  };

  // `type_name` is what Python would call the class (`torch.nn.Linear`,
  // `MyModel`); `forward_params` the names (and defaults) of forward's
  // parameters after self.
  explicit Module(std::string type_name, std::vector<Param> forward_params = {"x"});

  const std::string& type_name() const { return type_name_; }
  const std::vector<Param>& forward_params() const { return params_; }

  // forward's type annotations, as Python's forward.__annotations__ holds
  // them: a parameter's name, or "return", to the type as Python spells it
  // (`torch.Tensor`). The tracer gives them to the root's placeholders and
  // output node, as torch.fx does: `%x : torch.Tensor [...]` and
  // `def forward(self, x : torch.Tensor) -> torch.Tensor:`.
  const std::vector<std::pair<std::string, std::string>>& annotations() const { return annotations_; }
  std::optional<std::string> annotation(std::string_view name) const {
    for (const auto& [n, type] : annotations_)
      if (n == name) return type;
    return std::nullopt;
  }

  // The computation. `args` holds one value per forward parameter, defaults
  // filled in.
  virtual Value forward(const std::vector<Value>& args) = 0;

  // Calls the module: binds positional values and fx::kw(...) keywords to
  // forward's parameters, then runs forward, or, while tracing, lets the
  // tracer decide (a leaf module becomes one call_module node).
  template <class... A>
  Value operator()(A&&... a) {
    std::vector<Value> args;
    ValueKwargs kwargs;
    detail::pack_into(args, kwargs, std::forward<A>(a)...);
    return call(std::move(args), std::move(kwargs));
  }
  Value call(std::vector<Value> args, ValueKwargs kwargs = {});

  // A standard module of fx::nn (torch.nn in Python): traced as one
  // call_module node by default (Tracer::is_leaf_module).
  virtual bool is_standard_leaf() const { return false; }

  // What a call_module of this module does besides returning its value, for
  // dead-code elimination, CSE and folding (torch.fx reads a module's
  // `_is_impure`): nothing, unless a class says otherwise (a Dropout in
  // training consumes the RNG).
  virtual Impurity impurity() const { return Impurity::none; }

  // Asks the processor for what calling this module reads first. A container
  // that calls many modules in a row does it a few calls ahead: in a model of
  // thousands of modules, each one is otherwise a cache miss.
  void prefetch_call() const {
    __builtin_prefetch(this);  // the vtable pointer
    __builtin_prefetch(&traced_target_);
    // traced_target_ and params_ are adjacent, 32 bytes in all: they touch
    // at most two lines, the one of &traced_target_ and the one holding the
    // end of params_ (prefetching one byte past it is harmless when that is
    // a new line).
    __builtin_prefetch(&params_ + 1);
  }

  // A plain tensor attribute (Python's `self.offset = torch.zeros(3)`):
  // neither a parameter nor a buffer, so not in the state dict, but known by
  // name to the tracer (a get_attr node) and to GraphModule. Re-registering a
  // name replaces the tensor.
  at::Tensor register_attribute(const std::string& name, at::Tensor value);
  // In the order registered.
  const std::vector<std::pair<std::string, at::Tensor>>& attributes() const { return attributes_; }
  // The attribute `name`, or nullptr. O(1): a traced model can hold
  // thousands of `_tensor_constantN`.
  const at::Tensor* attribute(const std::string& name) const {
    auto it = attribute_index_.find(name);
    return it == attribute_index_.end() ? nullptr : &attributes_[it->second].second;
  }

  // What Python's repr(module) shows inside the parentheses
  // (`in_features=4, out_features=5, bias=True` for Linear).
  virtual std::string extra_repr() const { return ""; }
  // Python's repr(module): the class name, extra_repr and the children.
  std::string repr() const;

  // forward's arguments in parameter order, defaults filled in; throws
  // fx::Error naming the module and the parameter for a missing, unknown
  // or repeated argument.
  std::vector<Value> bind(std::vector<Value> args, ValueKwargs kwargs) const;

  // Deep copy (Python's copy.deepcopy): torch::nn::Module::clone, which a
  // module class overrides by constructing a new instance with the same
  // configuration and calling copy_state_from(*this). The default throws.
  //
  // Copies every parameter, buffer and tensor attribute of `other` (same
  // names, own storage, same requires_grad) and the training flag onto this
  // module's own, recursively through children of the same names. Throws
  // fx::Error naming the entry that this module lacks or whose shape differs.
  void copy_state_from(const torch::nn::Module& other);

 protected:
  void set_forward_params(std::vector<Param> params) { params_ = std::move(params); }
  // Annotates forward's parameter `name` (or its result: "return") with
  // `type`; throws fx::Error for a name forward does not have.
  void annotate(const std::string& name, std::string type) {
    bool known = name == "return";
    for (const auto& p : params_) known = known || p.name == name;
    if (!known) throw Error(type_name_ + ".forward has no parameter '" + name + "' to annotate");
    for (auto& [n, t] : annotations_)
      if (n == name) {
        t = std::move(type);
        return;
      }
    annotations_.emplace_back(name, std::move(type));
  }

 private:
  friend class Tracer;
  // The target this module was last recorded under by a tracer (its path,
  // interned). The next trace compares it with the module's path instead of
  // looking the path up in the global table of targets. Entries live
  // forever, so any value read is one to compare; a copy starts empty.
  struct TracedTarget {
    TracedTarget() = default;
    TracedTarget(const TracedTarget&) {}
    TracedTarget& operator=(const TracedTarget&) { return *this; }
    std::atomic<const detail::TargetEntry*> entry{nullptr};
  };

  std::string type_name_;
  mutable TracedTarget traced_target_;
  std::vector<Param> params_;
  std::vector<std::pair<std::string, at::Tensor>> attributes_;
  std::unordered_map<std::string, size_t> attribute_index_;  // name -> its index in attributes_
  std::vector<std::pair<std::string, std::string>> annotations_;
};

}  // namespace fx
