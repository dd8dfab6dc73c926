#include "recorder.h"

#include <fx/error.h>
#include <fx/passes/shape_prop.h>
#include <fx/value.h>

#include "../trace/stack_trace.h"

#include <ATen/core/enum_tag.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <optional>

namespace fx::capture_detail {

namespace {

// `torch.ops.aten.addmm.default`: how make_fx names an overload.
std::string target_name(const c10::FunctionSchema& s) {
  const std::string& full = s.name();  // aten::addmm
  size_t colons = full.find("::");
  std::string ns = colons == std::string::npos ? "aten" : full.substr(0, colons);
  std::string op = colons == std::string::npos ? full : full.substr(colons + 2);
  return "torch.ops." + ns + "." + op + "." + (s.overload_name().empty() ? "default" : s.overload_name());
}

// make_fx names a node after the overload's packet: `addmm`, `sum` (made
// `sum_1` by the namespace, as it shadows a builtin).
std::string packet_name(const c10::FunctionSchema& s) {
  const std::string& full = s.name();
  size_t colons = full.find("::");
  return colons == std::string::npos ? full : full.substr(colons + 2);
}

c10::TypePtr element_type(const c10::TypePtr& type) {
  if (!type) return nullptr;
  c10::TypePtr t = type;
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  if (auto list = t->cast<c10::ListType>()) return list->getElementType();
  return nullptr;
}

// aten::lift_fresh and friends: how LibTorch hands a tensor it made below
// the dispatcher (torch::tensor) to the operators.
bool lifting(const c10::OperatorHandle* op) {
  if (!op) return false;
  const std::string& name = op->schema().name();
  return name == "aten::lift_fresh" || name == "aten::lift" || name == "aten::lift_fresh_copy";
}

const c10::OperatorName& detach_name() {
  static const c10::OperatorName name("aten::detach", "");
  return name;
}

bool is_kind(const c10::TypePtr& type, c10::TypeKind kind) {
  if (!type) return false;
  if (type->kind() == kind) return true;
  if (auto opt = type->cast<c10::OptionalType>()) return opt->getElementType()->kind() == kind;
  return false;
}

}  // namespace

std::string operator_name(const c10::OperatorHandle& op) {
  const auto& s = op.schema();
  return s.name() + (s.overload_name().empty() ? "" : "." + s.overload_name());
}

Recorder::Recorder(const CaptureOptions& options, torch::nn::Module* root)
    : options_(options),
      root_(root),
      key_(options.decompose ? kBelowAutogradKey : kAboveAutogradKey),
      graph_(std::make_unique<Graph>()) {
  if (!root) return;
  // The first name of a shared tensor wins, as named_parameters() dedupes
  // and make_fx takes the first match.
  for (const auto& p : root->named_parameters(/*recurse=*/true))
    root_tensors_.try_emplace(p.value().unsafeGetTensorImpl(),
                              RootTensor{WeakImpl(p.value().getIntrusivePtr()), p.key(), true});
  for (const auto& b : root->named_buffers(/*recurse=*/true))
    if (b.value().defined())
      root_tensors_.try_emplace(b.value().unsafeGetTensorImpl(),
                                RootTensor{WeakImpl(b.value().getIntrusivePtr()), b.key(), false});
}

// ---- tensors and the nodes that stand for them ---------------------------

Node* Recorder::node_of(const at::Tensor& t) const {
  // A tracked entry's address is pinned by its weak reference, so a live
  // tensor at that address is the tensor that was bound.
  auto it = tracked_.find(t.unsafeGetTensorImpl());
  if (it != tracked_.end()) return it->second.node;
  if (!t.has_storage()) return nullptr;
  auto views = by_storage_.find(t.storage().unsafeGetStorageImpl());
  if (views == by_storage_.end()) return nullptr;
  for (auto v = views->second.rbegin(); v != views->second.rend(); ++v)
    if (v->geometry.matches(t)) return v->node;
  return nullptr;
}

void Recorder::sweep_tracked() {
  const size_t size = tracked_.size() + by_storage_.size();
  if (size < std::max<size_t>(32, 2 * tracked_after_sweep_)) return;
  std::erase_if(tracked_, [](const auto& entry) { return entry.second.impl.expired(); });
  // Each vector's Views pin one storage: all of them live or none.
  std::erase_if(by_storage_, [](const auto& entry) { return entry.second.front().storage.expired(); });
  tracked_after_sweep_ = tracked_.size() + by_storage_.size();
}

void Recorder::bind(const at::Tensor& t, Node* n) {
  sweep_tracked();
  auto it = tracked_.find(t.unsafeGetTensorImpl());
  if (it == tracked_.end())
    tracked_.emplace(t.unsafeGetTensorImpl(), Tracked{WeakImpl(t.getIntrusivePtr()), n});
  else
    it->second.node = n;
  if (t.has_storage() && t.storage().unsafeGetStorageImpl()) {
    c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    by_storage_[storage].push_back(View{t.storage().getWeakStorageImpl(), n, Geometry::of(t)});
  }
  n->meta().set("tensor_meta", passes::extract_tensor_metadata(t));
}

std::string Recorder::constant_name(const at::Tensor& t) {
  auto it = constants_.find(t.unsafeGetTensorImpl());
  if (it != constants_.end()) return it->second.path;
  const std::string last =
      last_operator_ ? " (the last operator called: " + operator_name(*last_operator_) + ")" : std::string();
  if (const Node* outer = enclosing_ ? enclosing_->node_of(t) : nullptr)
    fail("a branch of fx::cond or fx::while_loop reads '" + outer->name() +
         "', a value of the code around it that is not one of its operands; pass it to the branch in the "
         "operands (torch.cond's rule: a branch's graph takes its tensors as inputs)");
  switch (made_during_capture(t)) {
    case MadeDuringCapture::on_another_thread:
      fail("a tensor made on another thread while the capture ran is used" + last +
           "; fx::capture records the operators of the capturing thread only, so the graph could hold it "
           "only as a constant of this run. Compute it on the capturing thread, or before the capture "
           "starts (it is then a constant of the graph)");
    case MadeDuringCapture::unseen_on_this_thread:
      // Made unseen on purpose: a number wrapped into a tensor for an
      // operator call, a fresh tensor (torch::tensor) handed to lift_fresh.
      if (t.unsafeGetTensorImpl()->is_wrapped_number() || lifting(last_operator_)) break;
      fail("a tensor made during the capture by code the capture did not see is used" + last +
           (options_.decompose ? std::string()
                               : "; with CaptureOptions::decompose off the capture sits above autograd, "
                                 "so the copies autograd saves for the backward are made unseen") +
           "; the graph could hold it only as a constant of this run. " +
           (options_.decompose ? "Make it with tensor operators (not by writing memory directly)"
                               : "Capture backward with decompose on (the default)"));
    case MadeDuringCapture::no:
      break;
  }
  // make_fx: nn.Parameters become _param_constant<i>, other tensors
  // _tensor_constant<i>; C++ has no Parameter type, and a leaf that
  // requires grad is what a parameter is.
  bool parameter = t.is_leaf() && t.requires_grad();
  std::string name;
  do {
    name = parameter ? "_param_constant" + std::to_string(param_constants_++)
                     : "_tensor_constant" + std::to_string(tensor_constants_++);
  } while (attrs_.count(name));
  attrs_.emplace(name, parameter ? GraphModule::Attr::parameter(t) : GraphModule::Attr(t));
  constants_.emplace(t.unsafeGetTensorImpl(), RootTensor{WeakImpl(t.getIntrusivePtr()), name, parameter});
  return name;
}

Argument Recorder::tensor_argument(const at::Tensor& t) {
  if (!t.defined()) return None;
  sync(t);
  if (Node* n = node_of(t)) return n;
  // A number wrapped into a tensor for an operator call (the runtime's
  // add.Tensor(x, 1)) is the number in the graph, as make_fx records it:
  // torch hands wrapped numbers to Python as numbers.
  // (Read from memory: item() is an operator call the capture would see.)
  if (t.unsafeGetTensorImpl()->is_wrapped_number() && t.device().is_cpu() && t.numel() == 1) {
    switch (t.scalar_type()) {
      case at::kBool:
        return *static_cast<const bool*>(t.const_data_ptr());
      case at::kLong:
        return *static_cast<const int64_t*>(t.const_data_ptr());
      case at::kDouble:
        return *static_cast<const double*>(t.const_data_ptr());
      default:
        break;
    }
  }
  std::string path;
  auto root = root_tensors_.find(t.unsafeGetTensorImpl());
  if (root != root_tensors_.end()) {
    path = root->second.path;
    attrs_.try_emplace(path, root->second.parameter ? GraphModule::Attr::parameter(t) : GraphModule::Attr(t));
  } else {
    path = constant_name(t);
  }
  // A get_attr node per use, as make_fx creates one each time a parameter
  // or constant is an argument.
  Node* n = graph_->get_attr(path);
  n->meta().set("tensor_meta", passes::extract_tensor_metadata(t));
  return n;
}

Argument Recorder::to_argument(const c10::IValue& v, const c10::TypePtr& type) {
  if (v.isTensor()) return tensor_argument(v.toTensor());
  if (v.isNone()) return None;
  // Python's binding turns these ints into torch.dtype, torch.layout and
  // torch.memory_format by the schema's type (parseIValuesToPyArgsKwargs).
  if (v.isInt() && is_kind(type, c10::TypeKind::ScalarTypeType))
    return static_cast<c10::ScalarType>(v.toInt());
  if (v.isInt() && is_kind(type, c10::TypeKind::LayoutType)) return static_cast<c10::Layout>(v.toInt());
  if (v.isInt() && is_kind(type, c10::TypeKind::MemoryFormatType))
    return static_cast<c10::MemoryFormat>(v.toInt());
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isSymInt()) return v.toSymInt().expect_int();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return v.toDevice();
  if (v.isTuple()) {
    Tuple out;
    for (const auto& e : v.toTupleRef().elements()) out.items.push_back(to_argument(e, nullptr));
    return out;
  }
  if (v.isList()) {
    c10::TypePtr elem = element_type(type);
    List out;
    for (const c10::IValue& e : v.toListRef()) out.items.push_back(to_argument(e, elem));
    return out;
  }
  fail("cannot record an argument of type " + std::string(v.tagKind()) +
       "; fxcpp records tensors, numbers, bools, strings, devices, dtypes and lists or tuples of them");
}

// ---- recording one operator ----------------------------------------------

int Recorder::free_index(const std::vector<std::string>& prefixes) const {
  for (int i = 0;; ++i) {
    bool taken = false;
    for (const auto& p : prefixes) taken = taken || attrs_.count(p + std::to_string(i)) > 0;
    if (!taken) return i;
  }
}

Node* Recorder::subgraph(const std::string& name, std::shared_ptr<GraphModule> module) {
  attrs_.emplace(name, GraphModule::Attr(std::move(module)));
  return graph_->get_attr(name);
}

void Recorder::record_higher_order(const std::string& target, Args args,
                                   const std::vector<at::Tensor>& results) {
  Node* n = graph_->create_node(Op::call_function, Target(target), std::move(args));
  for (size_t i = 0; i < results.size(); ++i) bind(results[i], getitem(n, static_cast<int64_t>(i)));
}

Node* Recorder::getitem(Node* n, int64_t index) {
  return graph_->create_node(Op::call_function, "operator.getitem", {n, index});
}

void Recorder::bind_outputs(Node* n, const torch::jit::Stack& stack, size_t first, size_t count) {
  // track_tensor_tree: a single tensor is the node; a list, or each
  // element of several returns, is a getitem of it (made for every element,
  // tensor or not, in order, as make_fx makes them).
  auto bind_list = [&](Node* list_node, const c10::IValue& v) {
    int64_t i = 0;
    for (const c10::IValue& e : v.toListRef()) {
      Node* item = getitem(list_node, i++);
      if (e.isTensor() && e.toTensor().defined()) bind(e.toTensor(), item);
    }
  };
  if (count == 1) {
    const c10::IValue& v = stack[first];
    if (v.isTensor() && v.toTensor().defined())
      bind(v.toTensor(), n);
    else if (v.isList())
      bind_list(n, v);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const c10::IValue& v = stack[first + i];
    Node* item = getitem(n, static_cast<int64_t>(i));
    if (v.isTensor() && v.toTensor().defined())
      bind(v.toTensor(), item);
    else if (v.isList())
      bind_list(item, v);
  }
}

Node* Recorder::create_call(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first) {
  const c10::FunctionSchema& schema = op.schema();
  const auto& formals = schema.arguments();
  const size_t n = formals.size();
  // Python's binding of a boxed call (parseIValuesToPyArgsKwargs): trailing
  // positional arguments equal to their defaults are left out, keyword-only
  // arguments are kwargs unless they are their defaults.
  auto is_default = [&](size_t i) {
    const auto& d = formals[i].default_value();
    return d.has_value() && *d == stack[first + i];
  };
  size_t kwarg_only_start = n;
  while (kwarg_only_start > 0 && formals[kwarg_only_start - 1].kwarg_only()) --kwarg_only_start;
  size_t positional_end = kwarg_only_start;
  while (positional_end > 0 && is_default(positional_end - 1)) --positional_end;

  Args args;
  for (size_t i = 0; i < positional_end; ++i)
    args.push_back(to_argument(stack[first + i], formals[i].real_type()));
  Kwargs kwargs;
  for (size_t i = kwarg_only_start; i < n; ++i)
    if (!is_default(i))
      kwargs.emplace_back(formals[i].name(), to_argument(stack[first + i], formals[i].real_type()));
  Node* node = graph_->create_node(Op::call_function, target_name(schema), std::move(args), std::move(kwargs),
                                   packet_name(schema));
  if (options_.record_stack_traces) node->set_stack_trace(detail::user_stack_trace());
  return node;
}

void Recorder::record(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack,
                      size_t first) {
  // functionalize: a view op reads its `self` as it is (without syncing
  // it), and its results remember how they were made.
  const bool view = options_.functionalize && (*stack)[first].isTensor() && is_view_op(op);
  std::optional<ReadsWithoutSync> no_sync;
  if (view) no_sync.emplace(*this);
  Node* node = create_call(op, *stack, first);
  no_sync.reset();
  at::Tensor self;
  torch::jit::Stack view_args;
  if (view) {
    self = (*stack)[first].toTensor();
    view_args.assign(stack->begin() + static_cast<std::ptrdiff_t>(first) + 1, stack->end());
  }
  redispatch(op, keys, stack);
  const size_t returns = op.schema().returns().size();
  const size_t out_first = stack->size() - returns;
  bind_outputs(node, *stack, out_first, returns);
  if (view) note_views(op, self, std::move(view_args), *stack, out_first);
}

void Recorder::on_operator(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                           torch::jit::Stack* stack) {
  const size_t first = stack->size() - op.schema().arguments().size();
  last_operator_ = &op;
  if (options_.decompose && op.operator_name() == detach_name()) {
    // make_fx's default decompositions run detach as aten::alias (the
    // graph runs without autograd, where the two are the same): the call
    // goes to alias, which reaches this fallback and is recorded.
    static const c10::OperatorHandle alias =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::alias", "");
    alias.callBoxed(stack);
    return;
  }
  if (options_.decompose && op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
    // Below Autograd these come decomposed; one that arrives anyway (called
    // from below Autograd) runs its decomposition here, with this mode still
    // on, so that what it calls is recorded.
    decomposing_.push_back(&op);
    struct Pop {
      std::vector<const c10::OperatorHandle*>& v;
      ~Pop() { v.pop_back(); }
    } pop{decomposing_};
    op.callBoxedForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd, *stack);
    return;
  }
  check_data_dependent(op);
  if (options_.functionalize && record_functionalized(op, keys, stack, first)) return;
  check_mutations(op, *stack, first);
  record(op, keys, stack, first);
}

void Recorder::redispatch(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard off(capture_keys(key_));
  op.redispatchBoxed(keys - capture_keys(key_), stack);
}

// ---- checks ----------------------------------------------------------------

void Recorder::check_data_dependent(const c10::OperatorHandle& op) {
  if (!op.hasTag(at::Tag::data_dependent_output) && !op.hasTag(at::Tag::dynamic_output_shape)) return;
  std::string what = operator_name(op);
  if (options_.allow_data_dependent) {
    TORCH_WARN("fx::capture: ", what, " reads tensor data; the graph holds what it returned on this run");
    return;
  }
  if (!decomposing_.empty()) what = operator_name(*decomposing_.front()) + " (which calls " + what + ")";
  fail(what +
       " reads tensor data: its result depends on the values, which a graph cannot hold. Compute it "
       "with tensor operators, or set CaptureOptions::allow_data_dependent to record this run's "
       "result as it is");
}

std::string Recorder::last_operator() const { return last_operator_ ? operator_name(*last_operator_) : ""; }

std::string Recorder::describe(const Node* n) const {
  return n->op() == Op::placeholder ? "input '" + n->name() + "'" : "'" + n->name() + "'";
}

void Recorder::check_mutations(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first) {
  const auto& formals = op.schema().arguments();
  for (size_t i = 0; i < formals.size(); ++i) {
    if (!writes(formals[i]) || !stack[first + i].isTensor()) continue;
    const at::Tensor& t = stack[first + i].toTensor();
    Node* n = node_of(t);
    if (!n || n->op() != Op::placeholder) continue;
    fail(operator_name(op) + " updates " + describe(n) + " in place (argument '" + formals[i].name() +
         "'): the graph would change its caller's tensor. Set CaptureOptions::functionalize to record an "
         "out-of-place operator and write the update back at the end, or copy the input first");
  }
}

[[noreturn]] void Recorder::fail(const std::string& message) const {
  std::string where = detail::user_stack_trace();
  throw TraceError("capture: " + message + (where.empty() ? "" : "\ncalled from:\n" + where));
}

}  // namespace fx::capture_detail
