// Tensors made by other threads while a capture runs. Capture records the
// operators of the capturing thread only, so a tensor another thread
// computed meanwhile would enter the graph as a constant holding this run's
// value, silently. To tell such a tensor from a constant made before the
// capture (which is legitimate), a forwarding CPU allocator notes the
// addresses that threads other than the capturing ones allocate while a
// capture runs. A tensor made before the capture is still alive, so its
// storage's address cannot be among them; an address the capturing thread
// allocates again is forgotten.
#include "recorder.h"

#include <c10/core/CPUAllocator.h>

#include <mutex>
#include <unordered_set>

namespace fx::capture_detail {

namespace {

std::mutex allocations_mutex;
std::unordered_set<const void*>& other_threads_allocations() {
  static auto* addresses = new std::unordered_set<const void*>;  // never destroyed: allocations outlive statics
  return *addresses;
}

class WatchingAllocator final : public c10::Allocator {
 public:
  explicit WatchingAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr p = inner_->allocate(n);
    if (p.get() && captures_are_running()) {
      std::lock_guard<std::mutex> lock(allocations_mutex);
      if (this_thread_captures())
        other_threads_allocations().erase(p.get());
      else
        other_threads_allocations().insert(p.get());
    }
    return p;
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void watch_other_threads(bool first_capture) {
  static std::once_flag once;
  std::call_once(once, [] {
    static WatchingAllocator allocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&allocator);
  });
  std::lock_guard<std::mutex> lock(allocations_mutex);
  if (first_capture) other_threads_allocations().clear();
}

bool made_on_another_thread(const at::Tensor& t) {
  if (!t.has_storage() || !t.storage().data()) return false;
  std::lock_guard<std::mutex> lock(allocations_mutex);
  return other_threads_allocations().count(t.storage().data()) > 0;
}

}  // namespace fx::capture_detail
