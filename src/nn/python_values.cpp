#include "python_values.h"

#include <fx/error.h>

#include <limits>

namespace fx::nn::detail {

std::vector<int64_t> ntuple(const std::string& module, const std::string& what, std::vector<int64_t> v,
                            size_t n) {
  if (v.size() == 1 && n > 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n)
    throw Error(module + ": " + what + " takes 1 or " + std::to_string(n) + " values, got " + py_tuple(v));
  return v;
}

bool same_object(const Value& a, const Value& b) {
  if (a.is_proxy() || b.is_proxy()) return a.is_proxy() && b.is_proxy() && a.node() == b.node();
  const c10::IValue x = a.ivalue(), y = b.ivalue();
  return x.isTensor() && y.isTensor() && x.toTensor().is_same(y.toTensor());
}

Value canonical_mask(const std::string& module, const Value& mask, const std::string& name,
                     const Value& like) {
  if (mask.is_none()) return mask;
  if (mask.has_proxy()) (void)static_cast<bool>(call("torch.is_floating_point", mask));  // a TraceError
  const at::ScalarType dtype = mask.tensor().scalar_type();
  if (at::isFloatingType(dtype)) return mask;
  if (dtype != at::kBool)
    throw Error(module + ": AssertionError: only bool and floating types of " + name + " are supported");
  return call("torch.zeros_like", mask, kw("dtype", like.dtype()))
      .call_method("masked_fill_", {mask, -std::numeric_limits<double>::infinity()});
}

}  // namespace fx::nn::detail
