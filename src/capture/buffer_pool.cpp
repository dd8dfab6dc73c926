// Large CPU buffers made while a capture runs come from memory of their
// own (mmap), not from malloc's heap.
//
// A capture runs the code for real, as eager does, but keeps small objects
// alive as it goes: the graph's nodes, their metadata, the recorder's
// tables. malloc places those in the holes that freed activations leave,
// so the holes no longer coalesce, and each new activation grows the heap:
// capturing ViT-B/16 at batch 8 ended with 0.5 GB of its heap free but
// fragmented, and faulting in the new pages took much of its time. Here
// the buffers of 1 MiB and more share mappings that hold nothing else, so
// a freed buffer's memory, its pages already faulted in, serves the next
// ones. What is freed when no capture runs is unmapped, and the free
// memory when the last capture ends.
#include "recorder.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

namespace fx::capture_detail {

namespace {

// Below this, malloc's bins serve well and a block would waste a page.
constexpr size_t kSmallest = size_t{1} << 20;
// Blocks are whole multiples of this, so that a block's pieces stay
// page-aligned mappings of their own.
constexpr size_t kGrain = size_t{64} << 10;

// Best fit over free ranges that are split and merged by address, as
// malloc's heap does, but holding large buffers only: a freed 25 MB buffer
// serves the next 12.8 MB one and the rest, and merges back with its
// neighbours, without faulting in new pages.
class BufferPool {
 public:
  void* take(size_t n) {
    const size_t size = (n + kGrain - 1) / kGrain * kGrain;
    std::lock_guard<std::mutex> lock(mutex_);
    auto fit = free_by_size_.lower_bound({size, nullptr});
    if (fit != free_by_size_.end()) {
      auto [free_size, p] = *fit;
      remove_free(p, free_size);
      if (free_size > size) add_free(p + size, free_size - size);
      return use(p, size);
    }
    // None fits. Free ranges are unmapped (largest first) only as far as
    // needed to keep all that is mapped within the most that was ever live
    // at once, or what is live now plus the new block: no more than the
    // capture's peak, which malloc's heap would hold too.
    while (!free_by_size_.empty() &&
           live_bytes_ + free_bytes_ + size > std::max(peak_live_bytes_, live_bytes_ + size)) {
      auto [free_size, p] = *free_by_size_.rbegin();
      remove_free(p, free_size);
      munmap(p, free_size);
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;  // malloc then tries
    return use(static_cast<char*>(p), size);
  }

  // Whether `p` is one of the pool's blocks (then it is kept or unmapped).
  bool give_back(void* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(block);
    if (it == live_.end()) return false;
    char* p = static_cast<char*>(block);
    size_t size = it->second;
    live_.erase(it);
    live_bytes_ -= size;
    // Read under the lock that release_free takes after the last capture
    // ends: a range kept here is then released with the rest.
    if (!captures_are_running()) {
      munmap(p, size);
      return true;
    }
    // Merged with the free ranges on either side. Neighbouring mappings
    // merge too: munmap takes a range across mappings.
    auto next = free_by_address_.find(p + size);
    if (next != free_by_address_.end()) {
      const size_t next_size = next->second;
      remove_free(p + size, next_size);
      size += next_size;
    }
    auto before = free_by_address_.lower_bound(p);
    if (before != free_by_address_.begin()) {
      --before;
      if (before->first + before->second == p) {
        auto [before_p, before_size] = *before;
        remove_free(before_p, before_size);
        p = before_p;
        size += before_size;
      }
    }
    add_free(p, size);
    return true;
  }

  bool holds(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.contains(p);
  }

  void release_free() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [p, size] : free_by_address_) munmap(p, size);
    free_by_address_.clear();
    free_by_size_.clear();
    free_bytes_ = 0;
    peak_live_bytes_ = live_bytes_;  // the next capture's peak starts here
  }

 private:
  void* use(char* p, size_t size) {
    live_.emplace(p, size);
    live_bytes_ += size;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
    return p;
  }
  void add_free(char* p, size_t size) {
    free_by_address_.emplace(p, size);
    free_by_size_.emplace(size, p);
    free_bytes_ += size;
  }
  void remove_free(char* p, size_t size) {
    free_by_address_.erase(p);
    free_by_size_.erase({size, p});
    free_bytes_ -= size;
  }

  std::mutex mutex_;
  std::unordered_map<const void*, size_t> live_;  // block -> its size
  std::map<char*, size_t> free_by_address_;
  std::set<std::pair<size_t, char*>> free_by_size_;
  size_t free_bytes_ = 0;
  size_t live_bytes_ = 0;
  size_t peak_live_bytes_ = 0;
};

BufferPool& pool() {
  static auto* p = new BufferPool;  // never destroyed: tensors may outlive statics
  return *p;
}

void delete_capture_buffer(void* p) { pool().give_back(p); }

}  // namespace

c10::DataPtr allocate_capture_buffer(size_t n) {
  if (n < kSmallest) return {};
  void* p = pool().take(n);
  if (!p) return {};
  return {p, p, &delete_capture_buffer, c10::Device(c10::DeviceType::CPU)};
}

bool free_capture_buffer(void* p) { return pool().give_back(p); }

bool is_capture_buffer(const void* p) { return pool().holds(p); }

void release_capture_buffers() { pool().release_free(); }

}  // namespace fx::capture_detail
