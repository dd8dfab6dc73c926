#pragma once
// A cap on the CPU memory one thread may allocate for a while.
//
// Loading a file constructs each leaf module from the constructor arguments
// the file gives, and a constructor allocates its parameters before anything
// can compare them with the tensors the file holds. A malformed file could ask
// for Linear(2**40, 2**40). Inside a budget, such an allocation throws
// fx::LoadError instead of exhausting memory.
//
// The first budget installs a forwarding CPU allocator (c10::SetCPUAllocator)
// that checks a thread-local budget; allocations of other threads, and of
// this one outside a budget, go straight to the allocator it replaced.

#include <cstddef>
#include <string>

namespace fx::detail {

class AllocationBudget {
 public:
  // `what` names what is being built, for the error message.
  AllocationBudget(size_t bytes, std::string what);
  ~AllocationBudget();
  AllocationBudget(const AllocationBudget&) = delete;
  AllocationBudget& operator=(const AllocationBudget&) = delete;
};

}  // namespace fx::detail
