// The form of a kernel's loops, which its source bakes in, and the sizes
// and strides it takes as arguments (`dims`). The code generator writes a
// kernel for a form; the compiled graph's kernel node checks, at each call,
// that its inputs have that form and passes their sizes and strides. One
// built kernel thereby serves every size of the same form.
#include "phases.h"

#include <c10/util/accumulate.h>

#include <c10/util/strides.h>

#include <algorithm>
#include <numeric>

namespace fx::compile_detail {

bool read_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::IntArrayRef shape,
                  std::vector<int64_t>& s) {
  const size_t rank = shape.size(), in_rank = sizes.size();
  if (in_rank > rank) return false;
  s.assign(rank, 0);
  for (size_t d = rank - in_rank; d < rank; ++d) {
    const size_t k = d - (rank - in_rank);
    if (sizes[k] == shape[d] && shape[d] != 1)
      s[d] = strides[k];
    else if (sizes[k] != 1 && shape[d] != 1)
      return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> read_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                                                 c10::IntArrayRef shape) {
  std::vector<int64_t> s;
  if (!read_strides(sizes, strides, shape, s)) return std::nullopt;
  return s;
}

std::vector<int64_t> permuted(c10::IntArrayRef v, c10::IntArrayRef order) {
  std::vector<int64_t> out;
  out.reserve(order.size());
  for (int64_t d : order) out.push_back(v[d]);
  return out;
}

std::vector<int64_t> dense_strides(c10::IntArrayRef shape, c10::IntArrayRef order) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) {
    s[order[i]] = step;
    step *= std::max<int64_t>(shape[order[i]], 1);
  }
  return s;
}

std::optional<std::vector<int64_t>> dense_order(c10::IntArrayRef shape, c10::IntArrayRef strides) {
  std::vector<int64_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  auto dense_in = [&](const std::vector<int64_t>& o) {
    const std::vector<int64_t> want = dense_strides(shape, o);
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1 && strides[d] != want[d]) return false;
    return true;
  };
  if (dense_in(order)) return order;  // row-major wins where a size of 1 makes both fit
  // Outermost first: by stride, the larger outside.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  if (dense_in(order)) return order;
  return std::nullopt;
}

namespace {

bool all_zero(const std::vector<int64_t>& s) {
  for (int64_t v : s)
    if (v) return false;
  return true;
}

// Dense in the kernel's order: `contiguous`, the strides of a contiguous
// tensor of `shape`, but along dimensions of size 1.
bool dense(const std::vector<int64_t>& s, c10::IntArrayRef shape, c10::IntArrayRef contiguous) {
  for (size_t d = 0; d < s.size(); ++d)
    if (shape[d] != 1 && s[d] != contiguous[d]) return false;
  return true;
}

}  // namespace

KernelForm kernel_form(bool row, c10::IntArrayRef shape, const std::vector<std::vector<int64_t>>& read,
                       std::vector<bool> full_outputs) {
  KernelForm f;
  f.rank = shape.size();
  f.full_outputs = std::move(full_outputs);
  bool flat = true;
  const c10::DimVector contiguous = c10::contiguous_strides(shape);
  for (const auto& s : read) flat = flat && (all_zero(s) || dense(s, shape, contiguous));
  f.loop = row ? Loop::rows : flat || shape.empty() ? Loop::flat : Loop::nested;
  for (const auto& s : read) {
    f.scalar.push_back(all_zero(s));
    // A flat loop reads each input as one value or dense, whichever
    // dimensions are broadcast; nested loops and rows add each non-zero
    // stride (and read the last dimension by its stride's kind).
    std::vector<bool> zero;
    if (f.loop != Loop::flat)
      for (int64_t v : s) zero.push_back(v == 0);
    f.zero.push_back(std::move(zero));
    f.inner_contiguous.push_back(f.loop != Loop::flat && s.back() == 1);
  }
  return f;
}

DimsLayout dims_layout(const KernelForm& f) {
  DimsLayout layout;
  if (f.loop == Loop::flat) return layout;
  size_t at = 2;  // after the number of rows and the row's length
  for (size_t d = 0; d + 1 < f.rank; ++d) layout.shape.push_back(at++);
  for (const auto& zero : f.zero) {
    layout.stride.emplace_back();
    for (bool z : zero) layout.stride.back().push_back(z ? std::nullopt : std::optional<size_t>(at++));
  }
  layout.size = at;
  return layout;
}

bool kernel_dims(const KernelForm& f, const DimsLayout& layout, c10::IntArrayRef shape,
                 const std::vector<std::vector<int64_t>>& read, std::vector<int64_t>& dims) {
  if (shape.size() != f.rank || read.size() != f.scalar.size()) return false;
  const c10::DimVector contiguous = c10::contiguous_strides(shape);
  for (size_t k = 0; k < read.size(); ++k) {
    const bool scalar = all_zero(read[k]);
    if (scalar != f.scalar[k]) return false;
    if (f.loop == Loop::flat) {
      if (!scalar && !dense(read[k], shape, contiguous)) return false;
      continue;
    }
    for (size_t d = 0; d < f.rank; ++d)
      if ((read[k][d] == 0) != f.zero[k][d]) return false;
    // A contiguous last dimension is read with vector loads; any other
    // stride (but 0) is gathered, which works for 1 too.
    if (f.loop != Loop::flat && f.inner_contiguous[k] && read[k].back() != 1) return false;
  }
  if (f.loop == Loop::flat) {
    dims.assign(1, c10::multiply_integers(shape));
  } else {
    dims.assign(layout.size, 0);
    // The rows are counted from the other dimensions, not numel / inner:
    // rows of no elements still each get a value (a sum over none is 0).
    dims[0] = c10::multiply_integers(shape.begin(), shape.end() - 1);
    dims[1] = shape.back();
    for (size_t d = 0; d < layout.shape.size(); ++d) dims[layout.shape[d]] = shape[d];
    for (size_t k = 0; k < read.size(); ++k)
      for (size_t d = 0; d < f.rank; ++d)
        if (layout.stride[k][d]) dims[*layout.stride[k][d]] = read[k][d];
  }
  return f.baked.empty() || dims == f.baked;
}

}  // namespace fx::compile_detail
