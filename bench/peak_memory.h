#pragma once
// The peak of the bytes that tensors hold on the CPU, measured by an
// allocator that wraps LibTorch's CPU allocator: what eager and a compiled
// program allocate above what was live before a call. It sees every tensor
// storage (weights, activations, kernel outputs), not the scratch memory
// that oneDNN and MKL take from malloc themselves.

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace fxbench {

class CountingAllocator final : public c10::Allocator {
 public:
  // Wraps the CPU allocator now in place, for the rest of the process.
  static CountingAllocator& install() {
    static CountingAllocator* allocator = [] {
      auto* a = new CountingAllocator(c10::GetCPUAllocator());
      c10::SetCPUAllocator(a, /*priority=*/100);
      return a;
    }();
    return *allocator;
  }

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = inner_->allocate(n);
    const c10::Device device = inner.device();
    if (inner.get() != inner.get_context())
      throw std::runtime_error("CountingAllocator: the CPU allocator it wraps returns wrapped pointers");
    void* data = inner.release_context();
    {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_[data] = n;
    }
    const int64_t now = live_ += static_cast<int64_t>(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return {data, data, &release, device};
  }
  // Storages keep the data as their context, as the CPU allocator's do, so
  // that raw_allocate (which convolutions use) works through this one.
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

  // The most bytes live at once while `body` ran, above those live before it.
  int64_t peak_during(const std::function<void()>& body) {
    const int64_t before = live_.load();
    peak_ = before;
    body();
    return peak_.load() - before;
  }

 private:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner), inner_deleter_(inner->raw_deleter()) {
    if (!inner_deleter_) throw std::runtime_error("CountingAllocator: the CPU allocator has no raw deleter");
  }
  static void release(void* data) {
    CountingAllocator& self = install();
    size_t n = 0;
    {
      std::lock_guard<std::mutex> lock(self.mu_);
      auto it = self.sizes_.find(data);
      if (it != self.sizes_.end()) {
        n = it->second;
        self.sizes_.erase(it);
      }
    }
    self.live_ -= static_cast<int64_t>(n);
    self.inner_deleter_(data);
  }

  c10::Allocator* inner_;
  c10::DeleterFnPtr inner_deleter_;
  std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
  std::atomic<int64_t> live_{0}, peak_{0};
};

}  // namespace fxbench
