#pragma once
// The state of one capture: the graph being built, which node each live
// tensor is, and the attributes the graph reads. dispatch_mode.cpp feeds it
// every operator call; capture.cpp sets it up and turns it into a
// GraphModule.

#include <fx/capture.h>
#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/operator_overloads.h>
#include <fx/tree_spec.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fx::capture_detail {

// The dispatch keys whose boxed fallback sees every operator call while a
// capture runs (docs/capture.md says why these). Below Autograd, as make_fx's
// Python mode: the calls autograd makes (the clone it saves before an
// in-place operator, the backward's operators) are seen, CompositeImplicit-
// Autograd operators arrive decomposed. Above Autograd: every call as the
// code made it, composite operators included (CaptureOptions::decompose off).
constexpr c10::DispatchKey kBelowAutogradKey = c10::DispatchKey::Fake;
constexpr c10::DispatchKey kAboveAutogradKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

// What the operators a capture runs itself (the recorded call, and the
// graph's bookkeeping calls) run below: its key, and the Python keys c10
// turns on while a mode is on its dispatch mode stack (dispatch_mode.cpp
// puts one there), whose fallback would hand the call to the mode.
inline c10::DispatchKeySet capture_keys(c10::DispatchKey key) {
  return c10::DispatchKeySet({key, c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot});
}

// A weak reference pins a TensorImpl's address (the object, not the
// tensor's storage, stays allocated), so a freed tensor's address is never
// mistaken for a new tensor's; and it leaves use_count() alone, which
// autograd's AccumulateGrad looks at.
using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// Where a tensor lies in its storage. Two TensorImpls on the same storage
// with the same geometry hold the same value: autograd's shallow copies of
// saved outputs, and of some view results, are found this way.
struct Geometry {
  int64_t offset;
  c10::SmallVector<int64_t, 5> sizes, strides;
  c10::ScalarType dtype;

  static Geometry of(const at::Tensor& t) {
    return {t.storage_offset(), c10::SmallVector<int64_t, 5>(t.sizes().begin(), t.sizes().end()),
            c10::SmallVector<int64_t, 5>(t.strides().begin(), t.strides().end()), t.scalar_type()};
  }
  bool matches(const at::Tensor& t) const {
    return offset == t.storage_offset() && dtype == t.scalar_type() && t.sizes() == c10::IntArrayRef(sizes) &&
           t.strides() == c10::IntArrayRef(strides);
  }
};

// True for an argument the operator writes (`Tensor(a!)`).
inline bool writes(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

class Recorder {
 public:
  Recorder(const CaptureOptions& options, torch::nn::Module* root);

  Graph& graph() { return *graph_; }
  // The key this capture's fallback is on.
  c10::DispatchKey key() const { return key_; }

  // Placeholders for the inputs: `<name>_1` for a tensor; a list or tuple
  // of tensors is flattened into `<name>_1`, `<name>_2`, ... and the graph
  // keeps the structure (PyTreeInfo), as make_fx does.
  void add_inputs(const std::vector<std::string>& names, const std::vector<c10::IValue>& inputs);

  // The dispatcher's view of one operator call: records it, runs it, and
  // binds its outputs to the nodes that stand for them.
  void on_operator(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

  // Writes back updates of inputs and attributes (functionalize) and makes
  // the output node: `result`, or `(result, {path: grad, ...})` with grads.
  void finish(const c10::IValue& result,
              const std::vector<std::pair<std::string, at::Tensor>>* grads = nullptr);

  // The attributes the graph's get_attr nodes name.
  std::map<std::string, GraphModule::Attr> take_attributes() { return std::move(attrs_); }
  std::unique_ptr<Graph> take_graph() { return std::move(graph_); }
  // The operator the code called last (`aten::mm`), or "" before any.
  std::string last_operator() const;

  // ---- fx::cond and fx::while_loop (control_flow.cpp) ---------------------
  const CaptureOptions& options() const { return options_; }
  torch::nn::Module* root() const { return root_; }
  // The node `t` is (a get_attr for a parameter or constant).
  Argument argument_of(const at::Tensor& t) { return tensor_argument(t); }
  // The first i for which no attribute `<prefix><i>` exists for any of the
  // prefixes: make_fx numbers a cond's true_graph_<i> and false_graph_<i> alike.
  int free_index(const std::vector<std::string>& prefixes) const;
  // `module` as the attribute `name`, read by a new get_attr node.
  Node* subgraph(const std::string& name, std::shared_ptr<GraphModule> module);
  // The recorder of the code around a branch this one captures: a tensor
  // that one has a node for, read by the branch, is a missing operand.
  void set_enclosing(const Recorder* enclosing) { enclosing_ = enclosing; }
  // A call of the higher-order operator `target` whose results are
  // `results`: each a getitem of the call, bound to the tensor.
  void record_higher_order(const std::string& target, Args args, const std::vector<at::Tensor>& results);

 private:
  struct Tracked {
    WeakImpl impl;
    Node* node;
  };
  struct RootTensor {
    WeakImpl impl;
    std::string path;
    bool parameter = false;
  };

  Argument tensor_argument(const at::Tensor& t);
  Argument to_argument(const c10::IValue& v, const c10::TypePtr& type);
  Argument output_argument(const c10::IValue& v, std::vector<Argument>* leaves, TreeSpec* spec);
  Node* placeholder(const std::string& name, const at::Tensor& t, size_t position);
  Node* node_of(const at::Tensor& t) const;
  void bind(const at::Tensor& t, Node* n);
  void bind_outputs(Node* n, const torch::jit::Stack& outputs, size_t first, size_t count);
  Node* getitem(Node* n, int64_t index);
  std::string constant_name(const at::Tensor& t);

  void check_data_dependent(const c10::OperatorHandle& op);
  void check_mutations(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first);
  bool record_functionalized(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                             torch::jit::Stack* stack, size_t first);
  void record(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack,
              size_t first);
  void redispatch(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);
  Node* create_call(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first);
  void write_back_mutations();

  // Views under functionalize (views.cpp).
  struct ViewStep {
    const c10::OperatorHandle* op;
    torch::jit::Stack args;  // the arguments after `self`
    int64_t output;          // the element of a list result, or -1
  };
  // How a tensor is made from the tensor that owns its storage (its base);
  // a base that has views has an entry with no steps.
  struct Alias {
    WeakImpl impl;
    // Kept alive by a view, which is replayed from it. A base's own entry
    // leaves it undefined (the base is `impl`): holding itself, a base
    // would never die, nor would the activations that have views.
    at::Tensor base;
    std::vector<ViewStep> steps;
    uint64_t generation;  // of the base's updates this alias has seen
  };
  // `a.base`, or for a base's own entry the base itself.
  static at::Tensor base_tensor(const Alias& a);
  // Drops the entries of tensors that died, each kind once its count has
  // doubled since the last sweep (linear in all): a dead view stops keeping
  // its base alive, and a dead base's entry stops pinning its TensorImpl.
  void sweep_aliases();
  // The alias entry of `t`, or aliases_.end(). Autograd may hand the code a
  // shallow copy of a view op's result (a new TensorImpl, as with saved
  // outputs): an entry with the same storage and geometry is t's too.
  std::unordered_map<const c10::TensorImpl*, Alias>::iterator find_alias(const at::Tensor& t);
  // An update through a view, not yet written into the base.
  struct Pending {
    std::vector<ViewStep> steps;
    at::Tensor value;  // bound to the node of the updated view's new value
  };
  torch::jit::Stack call(const c10::OperatorHandle& op, torch::jit::Stack stack, Node** node);
  at::Tensor replay(const at::Tensor& parent, const ViewStep& step);
  at::Tensor inverse(const at::Tensor& parent, const at::Tensor& updated, const ViewStep& step);
  void note_views(const c10::OperatorHandle& op, const at::Tensor& self, torch::jit::Stack args,
                  const torch::jit::Stack& outputs, size_t first);
  at::Tensor base_of(const at::Tensor& t);
  // After `t` was bound to its updated value: the update is pending on its
  // base, and every alias of the base is stale, `t` included.
  void updated_in_place(const at::Tensor& t);
  // Writes the pending updates of `base` into the storage's value and
  // returns that value.
  at::Tensor apply_updates(const at::Tensor& base);
  // Before `t` is read, and right after it is updated: pending updates are
  // written into its storage's value, and `t` is replayed from it if the
  // storage changed since `t` was bound.
  void sync(const at::Tensor& t);
  [[noreturn]] void fail(const std::string& message) const;
  std::string describe(const Node* n) const;

  CaptureOptions options_;
  torch::nn::Module* root_;
  const Recorder* enclosing_ = nullptr;
  c10::DispatchKey key_;
  std::unique_ptr<Graph> graph_;
  bool structured_ = false;  // some input is a list or tuple
  std::unordered_map<const c10::TensorImpl*, Tracked> tracked_;
  // Autograd saves a forward output as a shallow copy (a new TensorImpl on
  // the same storage, made without an operator call) and hands that copy to
  // the backward operators. A tensor that is not tracked but has exactly the
  // storage, offset, sizes, strides and dtype of a tracked one is the same
  // value; the latest binding wins.
  struct View {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;  // pins the address, as WeakImpl does
    Node* node;
    Geometry geometry;
  };
  std::unordered_map<const c10::StorageImpl*, std::vector<View>> by_storage_;
  // tracked_'s and by_storage_'s entries pin their tensors' TensorImpl and
  // StorageImpl objects (WeakImpl keeps an address from being reused). A
  // dead tensor's entry is erased once the tables have doubled since the
  // last sweep, which keeps the cost linear: pinned objects left among the
  // activations' buffers fragment malloc's heap, and a capture then takes
  // more memory than an eager run (ViT-B/16 at batch 8 on glibc, with the
  // heap serving its activations: 0.7 GB more without these sweeps, 0.4 GB
  // with them; buffer_pool.cpp now takes the large ones off the heap).
  void sweep_tracked();
  size_t tracked_after_sweep_ = 0;
  std::unordered_map<const c10::TensorImpl*, RootTensor> root_tensors_;
  std::unordered_map<const c10::TensorImpl*, RootTensor> constants_;
  std::map<std::string, GraphModule::Attr> attrs_;
  const c10::OperatorHandle* last_operator_ = nullptr;
  int param_constants_ = 0;
  int tensor_constants_ = 0;
  // Operators being run as their decompositions, outermost first: an error
  // names the operator the user called.
  std::vector<const c10::OperatorHandle*> decomposing_;
  // functionalize: aliases by TensorImpl, updates made per base, pending
  // updates per base. Reads sync, except a view op's read of its `self`
  // and the graph's own bookkeeping calls (as PyTorch's functionalization).
  std::unordered_map<const c10::TensorImpl*, Alias> aliases_;
  // Where each view lies in its storage (its entry's key is pinned by the
  // entry's WeakImpl): find_alias's fallback, and the list of view entries
  // that sweep_aliases walks.
  struct AliasView {
    const c10::TensorImpl* impl;
    Geometry geometry;
  };
  std::unordered_map<const c10::StorageImpl*, std::vector<AliasView>> alias_tensors_;  // by storage
  // The AliasViews above (each a view's entry), and how many were live at
  // the last sweep.
  size_t view_entries_ = 0;
  size_t live_view_entries_ = 0;
  size_t aliases_after_sweep_ = 0;
  std::unordered_map<const c10::TensorImpl*, uint64_t> updates_;
  std::unordered_map<const c10::TensorImpl*, std::vector<Pending>> pending_;
  // The value of each base's storage with the updates applied so far (the
  // base until the first update): what a stale alias is replayed from. The
  // base itself is an alias too, and keeps its old value until it is read.
  std::unordered_map<const c10::TensorImpl*, at::Tensor> storage_values_;
  bool reads_sync_ = true;
  // Clears reads_sync_ for a scope.
  struct ReadsWithoutSync {
    explicit ReadsWithoutSync(Recorder& r) : flag(r.reads_sync_) { flag = false; }
    ~ReadsWithoutSync() { flag = true; }
    bool& flag;
  };
  // Inputs and attributes updated in place under functionalize, in the
  // order of their first update: written back after the outputs are read.
  struct Mutated {
    at::Tensor tensor;
    Node* original;         // the placeholder, or nullptr for an attribute
    std::string attribute;  // the attribute's path
  };
  std::vector<Mutated> mutated_;
  std::unordered_set<const c10::TensorImpl*> mutated_set_;
};

// Runs `body` with `recorder` receiving every operator call on this thread.
// Throws fx::Error if a capture is already running on this thread.
void run_recording(Recorder& recorder, const std::function<void()>& body);
// The recorder of the capture this thread runs, or nullptr.
Recorder* recorder_here();
// Lets fx::cond and fx::while_loop, which run in the runtime below, record
// under a capture (control_flow.cpp); run_recording calls it.
void install_control_flow_recording();
// Inside a capture: runs `body` with `inner` receiving this thread's
// operator calls (a branch of fx::cond), then the capture's recorder again.
void run_nested(Recorder& inner, const std::function<void()>& body);
// Inside a capture: runs `body` with its operators run but not recorded
// (reading fx::cond's predicate, running fx::while_loop's iterations).
void run_unrecorded(const std::function<void()>& body);

// The out-of-place operator that computes what `op` (in-place or out=)
// writes, or nullptr: add_.Tensor -> add.Tensor, add.out -> add.Tensor.
const c10::OperatorHandle* functional_variant(const c10::OperatorHandle& op);

// Whether a capture runs on any thread (dispatch_mode.cpp).
bool captures_are_running();
// The thread whose capture this thread's operators belong to: this one, or
// the capturing thread for an autograd engine thread running its backward.
std::thread::id capturing_thread();

// Starts noting which thread makes each CPU allocation while captures run
// (unseen_tensors.cpp); `first_capture` (no other capture running) forgets
// the previous captures' notes.
void watch_allocations(bool first_capture);
// Whether `t`'s storage was allocated while a capture ran, and by which
// thread: a tensor the capture has no node for, made then, was made by an
// operator the capture did not see.
enum class MadeDuringCapture { no, on_another_thread, unseen_on_this_thread };
MadeDuringCapture made_during_capture(const at::Tensor& t);

// Large CPU buffers made while a capture runs (buffer_pool.cpp): the
// pool's memory, or an empty DataPtr for a small one (malloc serves it).
c10::DataPtr allocate_capture_buffer(size_t n);
// Frees `p` if it is such a buffer; false if it is not one.
bool free_capture_buffer(void* p);
// Whether `p` is such a buffer, in use.
bool is_capture_buffer(const void* p);
// Unmaps the pool's free memory (when the last capture ends).
void release_capture_buffers();

// `aten::add_.Tensor`, the name errors use.
std::string operator_name(const c10::OperatorHandle& op);

}  // namespace fx::capture_detail
