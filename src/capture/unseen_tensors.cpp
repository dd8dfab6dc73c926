// Tensors that reach a capture without an operator the capture saw: made by
// another thread while the capture ran, or on the capturing thread below the
// capture's dispatch key. Either would enter the graph as a constant holding
// this run's value, silently. To tell them from constants made before the
// capture (which are legitimate), a forwarding CPU allocator notes which
// thread allocated each address while a capture runs. A tensor made before
// the capture is still alive, so its storage's address cannot be among
// them.
#include "recorder.h"

#include <c10/core/CPUAllocator.h>

#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace fx::capture_detail {

namespace {

std::mutex allocations_mutex;
std::unordered_map<const void*, std::thread::id>& allocating_threads() {
  static auto* threads = new std::unordered_map<const void*, std::thread::id>;  // never destroyed
  return *threads;
}

// The inner allocator's raw deleter: raw_deallocate's, for what it made.
c10::DeleterFnPtr inner_raw_deleter = nullptr;

void raw_delete(void* p) {
  if (!free_capture_buffer(p)) inner_raw_deleter(p);
}

// While a capture runs, large buffers come from buffer_pool.cpp.
class WatchingAllocator final : public c10::Allocator {
 public:
  explicit WatchingAllocator(c10::Allocator* inner) : inner_(inner) {
    inner_raw_deleter = inner->raw_deleter();
  }
  c10::DataPtr allocate(size_t n) override {
    const bool capturing = captures_are_running();
    c10::DataPtr p = capturing ? allocate_capture_buffer(n) : c10::DataPtr();
    if (!p) p = inner_->allocate(n);
    if (p.get() && capturing) {
      std::lock_guard<std::mutex> lock(allocations_mutex);
      allocating_threads()[p.get()] = capturing_thread();
    }
    return p;
  }
  // A pool buffer's DataPtr has its own deleter; raw_deallocate has only
  // this one for both kinds.
  c10::DeleterFnPtr raw_deleter() const override { return inner_raw_deleter ? &raw_delete : nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void watch_allocations(bool first_capture) {
  static std::once_flag once;
  std::call_once(once, [] {
    static WatchingAllocator allocator(c10::GetCPUAllocator());
    // The highest priority: SetCPUAllocator silently ignores a lower one
    // than the allocator in place (a profiler's, a benchmark's counter).
    c10::SetCPUAllocator(&allocator, std::numeric_limits<uint8_t>::max());
  });
  std::lock_guard<std::mutex> lock(allocations_mutex);
  if (first_capture) allocating_threads().clear();
}

MadeDuringCapture made_during_capture(const at::Tensor& t) {
  if (!t.has_storage() || !t.storage().data()) return MadeDuringCapture::no;
  std::lock_guard<std::mutex> lock(allocations_mutex);
  auto it = allocating_threads().find(t.storage().data());
  if (it == allocating_threads().end()) return MadeDuringCapture::no;
  return it->second == capturing_thread() ? MadeDuringCapture::unseen_on_this_thread
                                          : MadeDuringCapture::on_another_thread;
}

}  // namespace fx::capture_detail
