#include "block_memory.h"

#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FXCPP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FXCPP_ASAN 1
#endif
#ifdef FXCPP_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace fx::detail {

namespace {

// Enough for the blocks of a graph of about 90k nodes; a thread that makes
// graphs one after the other reuses them all.
constexpr size_t kKeptBytes = size_t{32} << 20;

void poison(void* p, size_t bytes) {
#ifdef FXCPP_ASAN
  ASAN_POISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}
void unpoison(void* p, size_t bytes) {
#ifdef FXCPP_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}

class KeptBlocks {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < kept_.size(); ++i) {
      if (kept_[i].first != bytes) continue;
      void* p = kept_[i].second;
      kept_[i] = kept_.back();
      kept_.pop_back();
      kept_bytes_ -= bytes;
      unpoison(p, bytes);
      return p;
    }
    return nullptr;
  }
  bool keep(void* p, size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_bytes_ + bytes > kKeptBytes || kept_.size() == kept_.capacity()) return false;
    poison(p, bytes);
    kept_.emplace_back(bytes, p);
    kept_bytes_ += bytes;
    return true;
  }
  size_t kept_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_bytes_;
  }
  KeptBlocks() { kept_.reserve(64); }  // keep() does not allocate: it runs in destructors

 private:
  std::mutex mutex_;
  std::vector<std::pair<size_t, void*>> kept_;
  size_t kept_bytes_ = 0;
};

// Never destroyed: graphs may be destroyed during static destruction.
KeptBlocks& kept() {
  static auto* k = new KeptBlocks;
  return *k;
}

}  // namespace

void* acquire_block_memory(size_t bytes) {
  if (void* p = kept().take(bytes)) return p;
  return ::operator new(bytes);
}

void release_block_memory(void* p, size_t bytes) noexcept {
  if (p == nullptr || kept().keep(p, bytes)) return;
  ::operator delete(p);
}

size_t kept_block_memory() { return kept().kept_bytes(); }

}  // namespace fx::detail
