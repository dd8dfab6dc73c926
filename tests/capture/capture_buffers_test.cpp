// Large CPU buffers made while a capture runs (src/capture/buffer_pool.cpp),
// in a process of their own that installs its own CPU allocator before any
// capture, as a profiler or a memory counter would.
#include "../../src/capture/recorder.h"

#include <fx/capture.h>
#include <fx/error.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace {

using Inputs = std::vector<c10::IValue>;
using fx::capture_detail::is_capture_buffer;

// Forwards to the allocator it replaced, counting calls.
class UserAllocator final : public c10::Allocator {
 public:
  explicit UserAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) override {
    ++calls;
    return inner_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }
  std::atomic<int64_t> calls{0};

 private:
  c10::Allocator* inner_;
};

// Installed at load time, before any capture, with a priority above the
// default one's.
UserAllocator* const user = [] {
  auto* a = new UserAllocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(a, /*priority=*/100);
  return a;
}();

constexpr int64_t kLarge = int64_t{1} << 20;  // floats: 4 MiB

TEST(CaptureBuffers, LargeBuffersComeFromThePoolWhileACaptureRuns) {
  const void* first = nullptr;
  bool first_is_block = false, reused = false, small_is_block = true;
  at::Tensor kept;
  auto f = [&](const Inputs& in) -> c10::IValue {
    {
      auto a = torch::full({kLarge}, 2.0);
      first = a.data_ptr();
      first_is_block = is_capture_buffer(first);
    }
    auto b = torch::full({kLarge}, 3.0);
    reused = b.data_ptr() == first;
    small_is_block = is_capture_buffer(torch::ones({4}).data_ptr());
    kept = b;
    return in[0].toTensor() + b.sum();
  };
  const int64_t calls_before = user->calls.load();
  auto gm = fx::capture(f, {torch::ones({2})});
  EXPECT_TRUE(first_is_block) << "a 4 MiB buffer made during the capture is not a block of the pool";
  EXPECT_TRUE(reused) << "the freed block did not serve the next buffer of its size";
  EXPECT_FALSE(small_is_block);
  EXPECT_GT(user->calls.load(), calls_before) << "small buffers still come from the allocator in place";

  // A block outlives the capture, and is freed after it.
  EXPECT_TRUE(is_capture_buffer(kept.data_ptr()));
  EXPECT_EQ(kept.sum().item<double>(), 3.0 * static_cast<double>(kLarge));
  kept = at::Tensor();
  EXPECT_FALSE(is_capture_buffer(first));
  EXPECT_FALSE(is_capture_buffer(torch::full({kLarge}, 1.0).data_ptr())) << "a block outside a capture";

  auto x = torch::randn({2});
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), x + 3.0 * static_cast<double>(kLarge)));
}

TEST(CaptureBuffers, FreedMemoryIsSplitForSmallerBuffersAndMergedBack) {
  // As a resnet's stages do: a freed 8 MiB buffer serves two of 4 MiB,
  // which, freed, serve one of 8 MiB again, all at the same addresses.
  std::vector<const char*> addresses;
  auto address = [](const at::Tensor& t) { return static_cast<const char*>(t.data_ptr()); };
  auto f = [&](const Inputs& in) -> c10::IValue {
    addresses.push_back(address(torch::full({2 * kLarge}, 1.0)));
    {
      auto b = torch::full({kLarge}, 2.0), c = torch::full({kLarge}, 3.0);
      addresses.push_back(address(b));
      addresses.push_back(address(c));
    }
    addresses.push_back(address(torch::full({2 * kLarge}, 4.0)));
    return in[0].toTensor() * 2;
  };
  fx::capture(f, {torch::ones({2})});
  ASSERT_EQ(addresses.size(), 4U);
  EXPECT_EQ(addresses[1], addresses[0]) << "split: the first half";
  EXPECT_EQ(addresses[2], addresses[0] + kLarge * 4) << "split: the second half";
  EXPECT_EQ(addresses[3], addresses[0]) << "merged back";
}

TEST(CaptureBuffers, RawAllocationsOfEverySizeAreFreedDuringACapture) {
  // raw_deallocate has one deleter for the blocks and the rest.
  auto f = [&](const Inputs& in) -> c10::IValue {
    c10::Allocator* allocator = c10::GetCPUAllocator();
    for (size_t n : {size_t{16}, size_t{4096}, size_t{2} << 20, size_t{9} << 20}) {
      void* p = allocator->raw_allocate(n);
      std::memset(p, 1, n);
      allocator->raw_deallocate(p);
    }
    return in[0].toTensor() * 2;
  };
  auto gm = fx::capture(f, {torch::ones({2})});
  EXPECT_TRUE(torch::equal(gm->run({torch::ones({2})}).toTensor(), torch::full({2}, 2.0)));
}

TEST(CaptureBuffers, ThreadsShareThePool) {
  // A thread that is not capturing makes and frees large buffers while the
  // capturing one does (scripts/tsan.sh runs this under ThreadSanitizer).
  auto f = [&](const Inputs& in) -> c10::IValue {
    std::thread other([] {
      for (int64_t i = 0; i < 40; ++i) torch::empty({kLarge + i * 4096}).zero_();
    });
    at::Tensor y = in[0].toTensor();
    for (int64_t i = 0; i < 40; ++i) y = y + torch::full({kLarge - i * 4096}, 1.0).sum();
    other.join();
    return y;
  };
  auto gm = fx::capture(f, {torch::zeros({2})});
  auto want = 0.0;
  for (int64_t i = 0; i < 40; ++i) want += static_cast<double>(kLarge - i * 4096);
  EXPECT_TRUE(torch::allclose(gm->run({torch::zeros({2})}).toTensor(), torch::full({2}, want)));
}

TEST(CaptureBuffers, TensorsFromOtherThreadsAreRefusedOverTheUsersAllocator) {
  // The capture's allocator must take its place over one of a higher
  // priority than the default's: without it, this tensor would silently
  // become a constant of the graph.
  at::Tensor from_thread;
  auto f = [&](const Inputs& in) -> c10::IValue {
    std::thread t([&] { from_thread = torch::ones({2}) * 3; });
    t.join();
    return in[0].toTensor() + from_thread;
  };
  std::string msg;
  try {
    fx::capture(f, {torch::randn({2})});
  } catch (const fx::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("a tensor made on another thread while the capture ran"), std::string::npos) << msg;
}

}  // namespace
