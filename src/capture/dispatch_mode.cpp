// How capture sees every operator: a boxed fallback on a functionality key
// (recorder.h: kBelowAutogradKey, kAboveAutogradKey), switched on for the
// capturing thread only (c10's thread-local included key set); and, below
// autograd, an entry on c10's dispatch mode stack, so that LibTorch behaves
// as under make_fx's mode. docs/capture.md says why.
#include "recorder.h"

#include <fx/error.h>
#include <fx/value.h>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/alias_ops.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/PyInterpreter.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/library.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

namespace fx::capture_detail {

namespace {

// Who owns a capture: its recorder, and the thread that captures. The
// autograd engine runs a backward's functions on threads of its own too (a
// CUDA backward on the device's thread; reentrant backwards nested deeper
// than its limit on its pool), with the state of the thread that started
// the backward. c10's ThreadLocalDebugInfo is part of that state, so the
// capture leaves its owner there, and such a thread finds it.
struct CaptureOwner final : c10::DebugInfoBase {
  // One operator at a time, whichever thread runs it; recursive, because
  // recording one operator can call others (alias, decompositions).
  std::recursive_mutex mutex;
  Recorder* recorder;  // null once the capture has ended
  std::thread::id thread = std::this_thread::get_id();
  explicit CaptureOwner(Recorder* r) : recorder(r) {}
};
constexpr std::string_view kOwnerName = "fxcpp capture";
const c10::DebugInfoKind kOwnerKind(&kOwnerName);

thread_local CaptureOwner* active_owner = nullptr;  // set on the capturing thread
std::atomic<int> captures_running{0};

// The capture whose operators this thread runs: its own, or, on a thread of
// the autograd engine running a backward the capture started, that one.
// (A thread that only inherited the state, as at::launch passes it on, runs
// no graph task: its operators are refused, below.)
CaptureOwner* owner_here() {
  if (active_owner) return active_owner;
  if (torch::autograd::get_current_graph_task_id() == -1) return nullptr;
  return static_cast<CaptureOwner*>(c10::ThreadLocalDebugInfo::get(kOwnerKind));
}

template <c10::DispatchKey key>
void capture_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  if (CaptureOwner* owner = owner_here()) {
    std::lock_guard<std::recursive_mutex> lock(owner->mutex);
    Recorder* r = owner->recorder;
    if (r && r->key() == key) {
      r->on_operator(op, keys, stack);
      return;
    }
  }
  // The key is on, but this thread is not capturing: it inherited the
  // capturing thread's dispatch state (at::launch, a JIT fork) and runs part
  // of the captured code, which the graph would miss. (Kernels' own worker
  // threads inherit the key excluded and never get here.)
  if (captures_running.load() > 0)
    throw TraceError(
        "capture: " + op.schema().name() +
        " ran on another thread than the one capturing (it inherited the capture's dispatch state, "
        "as at::launch passes it on); fx::capture records the operators of one thread. Run this "
        "part of the code on the capturing thread");
  c10::impl::ExcludeDispatchKeyGuard off(capture_keys(key));
  op.redispatchBoxed(keys - capture_keys(key), stack);
}

// ---- the dispatch mode stack ------------------------------------------------
//
// make_fx's ProxyTorchDispatchMode sits on c10's dispatch mode stack, and
// LibTorch's C++ asks that stack whether a mode is active:
// - TensorImpl::shallow_copy_and_detach (autograd saving an output for the
//   backward, and unpacking it there) hands the copy to the mode's
//   interpreter as a `detach` call; make_fx records it, as aten.alias (its
//   default decompositions map detach to alias);
// - at::isTensorSubclassLike is true under a mode, so composite kernels and
//   backward formulas take their out-of-place paths (linear adds the bias
//   with add, not add_; the engine sums gradients with add, not add_).
// A capture below autograd puts an entry of its own on that stack, so that
// LibTorch takes the paths it takes under make_fx. The entry's interpreter
// is this C++ vtable, not Python: its detach records aten::alias. Pushing a
// mode also turns on the Python keys; the capture's calls run below them
// (capture_keys), so their fallback never hands a call to this vtable.

// Where a shallow copy lands while this thread captures below autograd: an
// aten::alias call, which the fallback records like any operator.
c10::intrusive_ptr<c10::TensorImpl> detach_under_capture(const c10::TensorImpl* self) {
  CaptureOwner* owner = owner_here();
  std::unique_lock<std::recursive_mutex> lock;
  if (owner) lock = std::unique_lock<std::recursive_mutex>(owner->mutex);
  Recorder* r = owner ? owner->recorder : nullptr;
  if (r && r->key() == kBelowAutogradKey) {
    at::Tensor t(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::unsafe_reclaim_from_nonowning(
        const_cast<c10::TensorImpl*>(self)));
    // Below autograd, as make_fx's mode receives it: the copy has no history.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return at::_ops::alias::call(t).getIntrusivePtr();
  }
  // Another thread that inherited the mode (its calls are refused by the
  // fallback), or a capture above autograd: a plain copy, as without a mode.
  c10::impl::ExcludeDispatchKeyGuard no_mode(c10::DispatchKey::Python);
  return self->shallow_copy_and_detach(self->version_counter(), self->allow_tensor_metadata_change());
}

[[noreturn]] void not_a_python_tensor(const char* what) {
  throw Error(std::string("capture: LibTorch asked fxcpp's dispatch mode for ") + what +
              ", which only a Python tensor answers; fx::capture makes none");
}

// The calls c10 makes to a mode's interpreter that are not about a Python
// tensor are detach and dispatch (and reference counting, of an object that
// is not one); the rest are asked of tensors with the Python key.
struct CaptureInterpreter final : c10::impl::PyInterpreterVTable {
  std::string name() const override { return "fxcpp capture"; }
  void incref(PyObject*) const override {}
  void decref(PyObject*) const override {}
  bool try_incref(const c10::impl::PyObjectSlot&) const override { return false; }
  size_t refcnt(PyObject*) const override { return 1; }
  c10::intrusive_ptr<c10::TensorImpl> detach(const c10::TensorImpl* self) const override {
    return detach_under_capture(self);
  }
  // Reached only through the Python key, which the capture's calls run
  // below: run the operator below it, as if the key were off.
  void dispatch(const c10::OperatorHandle& op, torch::jit::Stack* stack) const override {
    c10::impl::ExcludeDispatchKeyGuard off(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    op.callBoxed(stack);
  }
  void reportErrorCallback(PyObject*, c10::DispatchKey) const override {
    not_a_python_tensor("an error callback");
  }
  void python_op_registration_trampoline(const c10::OperatorHandle&, c10::DispatchKey, c10::DispatchKeySet,
                                         torch::jit::Stack*, bool, bool) const override {
    not_a_python_tensor("a Python operator registration");
  }
  void throw_abstract_impl_not_imported_error(std::string opname, const char*, const char*) const override {
    throw Error("capture: " + opname + " has its abstract implementation in a Python module");
  }
  void python_dispatcher(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*) const override {
    not_a_python_tensor("the Python dispatcher");
  }
  bool is_contiguous(const c10::TensorImpl*, at::MemoryFormat) const override {
    not_a_python_tensor("is_contiguous");
  }
  c10::SymBool sym_is_contiguous(const c10::TensorImpl*, at::MemoryFormat) const override {
    not_a_python_tensor("sym_is_contiguous");
  }
  bool is_strides_like(const c10::TensorImpl*, at::MemoryFormat) const override {
    not_a_python_tensor("is_strides_like");
  }
  bool is_non_overlapping_and_dense(const c10::TensorImpl*) const override {
    not_a_python_tensor("is_non_overlapping_and_dense");
  }
  c10::Device device(const c10::TensorImpl*) const override { not_a_python_tensor("device"); }
  int64_t dim(const c10::TensorImpl*) const override { not_a_python_tensor("dim"); }
  c10::IntArrayRef strides(const c10::TensorImpl*) const override { not_a_python_tensor("strides"); }
  c10::IntArrayRef sizes(const c10::TensorImpl*) const override { not_a_python_tensor("sizes"); }
  c10::SymIntArrayRef sym_sizes(const c10::TensorImpl*) const override { not_a_python_tensor("sym_sizes"); }
  c10::Layout layout(const c10::TensorImpl*) const override { not_a_python_tensor("layout"); }
  int64_t numel(const c10::TensorImpl*) const override { not_a_python_tensor("numel"); }
  c10::SymInt sym_numel(const c10::TensorImpl*) const override { not_a_python_tensor("sym_numel"); }
  c10::SymIntArrayRef sym_strides(const c10::TensorImpl*) const override {
    not_a_python_tensor("sym_strides");
  }
  c10::SymInt sym_storage_offset(const c10::TensorImpl*) const override {
    not_a_python_tensor("sym_storage_offset");
  }
  // GPU tracing reports to Python's tracer; there is none to tell.
  void trace_gpu_event_creation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_deletion(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_record(c10::DeviceType, uintptr_t, uintptr_t) const override {}
  void trace_gpu_event_wait(c10::DeviceType, uintptr_t, uintptr_t) const override {}
  void trace_gpu_memory_allocation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_memory_deallocation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_stream_creation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_device_synchronization(c10::DeviceType) const override {}
  void trace_gpu_stream_synchronization(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_synchronization(c10::DeviceType, uintptr_t) const override {}
  void reset_backward_hooks(const c10::TensorImpl*) const override {}
};

// Pushes the capture's entry on this thread's mode stack for a scope. The
// entry's object is a tag: nothing reads it but this interpreter.
class ModeOnStack {
 public:
  ModeOnStack() {
    static const CaptureInterpreter vtable;
    static c10::impl::PyInterpreter interpreter(&vtable);
    static char tag;
    c10::impl::TorchDispatchModeTLS::push_non_infra_mode_onto_stack(
        std::make_shared<c10::impl::PyObject_TorchDispatchMode>(reinterpret_cast<PyObject*>(&tag),
                                                                &interpreter));
  }
  ~ModeOnStack() { c10::impl::TorchDispatchModeTLS::pop_stack(); }
  ModeOnStack(const ModeOnStack&) = delete;
  ModeOnStack& operator=(const ModeOnStack&) = delete;
};

// The registrations live as long as the process: a static pointer keeps
// them reachable (for leak checkers) and never destroys them.
template <c10::DispatchKey key>
void register_on(std::string& failure) {
  static torch::Library* library = nullptr;
  try {
    library = new torch::Library(torch::Library::IMPL, "_", key, __FILE__, __LINE__);
    library->fallback(torch::CppFunction::makeFromBoxedFunction<&capture_fallback<key>>());
  } catch (const c10::Error& e) {
    failure = "cannot register fxcpp's dispatcher fallback for " + std::string(c10::toString(key)) +
              " (another library in this process uses that key): " + e.what_without_backtrace();
  }
}

// Registered on first use, not at load time, so that a program that never
// captures pays nothing; and never unregistered (the dispatcher may outlive
// any static of ours).
void register_fallback() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    register_on<kBelowAutogradKey>(failure);
    if (failure.empty()) register_on<kAboveAutogradKey>(failure);
  });
  if (!failure.empty()) throw Error("capture: " + failure);
}

}  // namespace

bool captures_are_running() { return captures_running.load() > 0; }

std::thread::id capturing_thread() {
  const CaptureOwner* owner = captures_running.load() > 0 ? owner_here() : nullptr;
  return owner ? owner->thread : std::this_thread::get_id();
}

Recorder* recorder_here() {
  CaptureOwner* owner = active_owner;
  return owner ? owner->recorder : nullptr;
}

void run_nested(Recorder& inner, const std::function<void()>& body) {
  CaptureOwner* owner = active_owner;
  if (!owner || !owner->recorder) throw Error("capture: run_nested outside a capture");
  if (inner.key() != owner->recorder->key()) throw Error("capture: a nested capture on another dispatch key");
  Recorder* outer = owner->recorder;
  struct Restore {
    CaptureOwner& owner;
    Recorder* outer;
    ~Restore() {
      std::lock_guard<std::recursive_mutex> lock(owner.mutex);
      owner.recorder = outer;
    }
  } restore{*owner, outer};
  {
    std::lock_guard<std::recursive_mutex> lock(owner->mutex);
    owner->recorder = &inner;
  }
  body();
}

void run_unrecorded(const std::function<void()>& body) {
  Recorder* r = recorder_here();
  if (!r) return body();
  c10::impl::ExcludeDispatchKeyGuard off(capture_keys(r->key()));
  body();
}

void run_recording(Recorder& recorder, const std::function<void()>& body) {
  register_fallback();
  install_control_flow_recording();
  if (active_owner)
    throw Error(
        "capture: a capture is already running on this thread; fx::capture cannot be called from "
        "inside the function being captured");
  auto owner = std::make_shared<CaptureOwner>(&recorder);
  struct Deactivate {
    CaptureOwner& owner;
    ~Deactivate() {
      // An engine thread may still hold the owner (a backward left running).
      std::lock_guard<std::recursive_mutex> lock(owner.mutex);
      owner.recorder = nullptr;
      active_owner = nullptr;
      if (--captures_running == 0) release_capture_buffers();
    }
  } deactivate{*owner};
  watch_allocations(/*first_capture=*/captures_running.load() == 0);
  active_owner = owner.get();
  ++captures_running;
  c10::DebugInfoGuard leave_owner(kOwnerKind, owner);
  c10::impl::IncludeDispatchKeyGuard on(recorder.key());
  std::optional<ModeOnStack> mode;
  if (recorder.key() == kBelowAutogradKey) mode.emplace();
  body();
}

}  // namespace fx::capture_detail
