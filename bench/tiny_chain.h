#pragma once
// exec_bench's chain of tiny operators as a C++ programmer writes it against
// LibTorch: prev = op(prev, ...) cycling through ten ops. exec_bench times
// it as the floor of graph execution; compile_bench compiles it.

#include <ATen/ATen.h>

#include <cstdint>
#include <stdexcept>

namespace fxbench {

constexpr int kOps = 10;

// The ten-op body is written out; the loop over it costs a counter.
inline at::Tensor handwritten(const at::Tensor& x, int64_t n) {
  at::Tensor prev = x;
  int64_t i = 0;
  for (; i + kOps <= n; i += kOps) {
    prev = at::add(prev, x);
    prev = prev * 0.5;
    prev = at::relu(prev);
    prev = prev.neg();
    prev = at::sigmoid(prev);
    prev = prev + x;
    prev = prev.mul(x);
    prev = at::neg(prev);
    prev = prev.relu();
    prev = prev.sigmoid();
  }
  if (i != n) throw std::runtime_error("handwritten: N must be a multiple of 10");
  return prev;
}

}  // namespace fxbench
