#include "python_values.h"

namespace fx::nn::detail {

std::vector<int64_t> ntuple(const std::string& module, const std::string& what, std::vector<int64_t> v,
                            size_t n) {
  if (v.size() == 1 && n > 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n)
    throw Error(module + ": " + what + " takes 1 or " + std::to_string(n) + " values, got " + py_tuple(v));
  return v;
}

}  // namespace fx::nn::detail
