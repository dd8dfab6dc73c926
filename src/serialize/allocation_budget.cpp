#include "allocation_budget.h"

#include <fx/error.h>

#include <c10/core/CPUAllocator.h>

#include <limits>
#include <mutex>

namespace fx::detail {

namespace {

struct Budget {
  size_t left;
  size_t total;
  std::string what;
  Budget* previous;
};

thread_local Budget* current_budget = nullptr;

class BudgetedAllocator final : public c10::Allocator {
 public:
  explicit BudgetedAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) override {
    if (Budget* b = current_budget) {
      if (n > b->left)
        throw LoadError(b->what +
                        " asks for more memory than the tensors the file holds for it account for (" +
                        std::to_string(b->total) + " bytes allowed, " + std::to_string(b->total - b->left) +
                        " used, " + std::to_string(n) + " more asked): its constructor arguments are wrong");
      b->left -= n;
    }
    return inner_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

 private:
  c10::Allocator* inner_;
};

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    static BudgetedAllocator allocator(c10::GetCPUAllocator());
    // The highest priority: SetCPUAllocator silently ignores a lower one
    // than the allocator in place (a profiler's, a benchmark's counter).
    c10::SetCPUAllocator(&allocator, std::numeric_limits<uint8_t>::max());
  });
}

}  // namespace

AllocationBudget::AllocationBudget(size_t bytes, std::string what) {
  install_once();
  current_budget = new Budget{bytes, bytes, std::move(what), current_budget};
}

AllocationBudget::~AllocationBudget() {
  Budget* b = current_budget;
  current_budget = b->previous;
  delete b;
}

}  // namespace fx::detail
