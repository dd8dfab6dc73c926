// How capture sees every operator: a boxed fallback on a functionality key
// (recorder.h: kBelowAutogradKey, kAboveAutogradKey), switched on for the
// capturing thread only (c10's thread-local included key set).
// docs/capture.md says why.
#include "recorder.h"

#include <fx/error.h>
#include <fx/value.h>

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <atomic>
#include <mutex>

namespace fx::capture_detail {

namespace {

thread_local Recorder* active_recorder = nullptr;
std::atomic<int> captures_running{0};

template <c10::DispatchKey key>
void capture_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  Recorder* r = active_recorder;
  if (r && r->key() == key) {
    r->on_operator(op, keys, stack);
    return;
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
  c10::impl::ExcludeDispatchKeyGuard off(key);
  op.redispatchBoxed(keys.remove(key), stack);
}

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

void run_recording(Recorder& recorder, const std::function<void()>& body) {
  register_fallback();
  if (active_recorder)
    throw Error(
        "capture: a capture is already running on this thread; fx::capture cannot be called from "
        "inside the function being captured");
  struct Deactivate {
    ~Deactivate() {
      active_recorder = nullptr;
      --captures_running;
    }
  } deactivate;
  watch_allocations(/*first_capture=*/captures_running.load() == 0);
  active_recorder = &recorder;
  ++captures_running;
  c10::impl::IncludeDispatchKeyGuard on(recorder.key());
  body();
}

}  // namespace fx::capture_detail
