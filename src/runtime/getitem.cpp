// operator.getitem: tensor indexing as Python does it (select, slice,
// unsqueeze, aten::index), and Python's indexing of tuples, lists, dicts and
// strings.
//
// Slices and Ellipsis arrive as the capsules of fx::slice_ivalue /
// fx::ellipsis_ivalue (to_ivalue makes them from fx::Slice / fx::Ellipsis).

#include "internal.h"

#include <limits>

namespace fx::runtime {

namespace {

constexpr const char* kFn = "operator.getitem";

std::optional<int64_t> slice_part(const c10::IValue& v) {
  if (v.isNone()) return std::nullopt;
  if (v.isInt() || v.isBool()) return to_int(kFn, v);
  if (v.isTensor() && v.toTensor().numel() == 1 && !v.toTensor().is_floating_point())
    return v.toTensor().item().toLong();
  throw Error("operator.getitem: slice indices must be integers or None, got " + python_type_name(v));
}

// An index that is a sequence or a tensor: the advanced-indexing tensor.
at::Tensor index_tensor(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor();
  if (v.isIntList()) return at::tensor(v.toIntVector(), at::kLong);
  if (v.isBoolList()) {
    auto b = v.toBoolList();
    std::vector<uint8_t> bytes(b.begin(), b.end());
    return at::tensor(bytes, at::kByte).to(at::kBool);
  }
  // ints, tensors and nested sequences: an index tensor, as Python makes
  std::vector<at::Tensor> parts;
  for (const auto& e : sequence_items(v)) {
    if (e.isInt())
      parts.push_back(at::scalar_tensor(e.toInt(), at::kLong));
    else if (e.isTensor())
      parts.push_back(e.toTensor());
    else if (is_sequence(e))
      parts.push_back(index_tensor(e));
    else
      throw Error("operator.getitem: a list index must hold ints or tensors, got " + python_type_name(e));
  }
  if (parts.empty()) return at::empty({0}, at::kLong);
  return at::stack(parts);
}

bool is_index_kind(const c10::IValue& v) {
  return v.isNone() || v.isBool() || v.isInt() || is_ellipsis(v) || is_slice(v) || v.isTensor() ||
         is_sequence(v);
}

// NumPy's old rule, which torch 2.14 still follows with a deprecation
// warning (python_variable_indexing.cpp, treatSequenceAsTuple): a list
// shorter than 32 that holds a tensor, a sequence, a slice, None or Ellipsis
// indexes as the tuple of its items (`x[[0, slice(None)]]` is `x[0, :]`).
bool list_as_tuple(const c10::IValue& v) {
  if (!v.isList() || v.isIntList() || v.isBoolList() || v.isDoubleList()) return false;
  const auto items = v.toListRef();
  if (items.size() >= 32) return false;
  for (const auto& e : items)
    if (e.isTensor() || is_sequence(e) || e.isString() || is_slice(e) || e.isNone() || is_ellipsis(e))
      return true;
  return false;
}

// Python's tensor indexing (torch/csrc/autograd/python_variable_indexing.cpp,
// applySlicing) with ATen ops: ints select, slices slice, None and bools
// unsqueeze, Ellipsis skips the unindexed dims, tensors and lists index
// through aten::index. (at::indexing::TensorIndex is not used: copying one
// in LibTorch 1.13 read an uninitialized bool, which UBSan reported. 2.14's
// TensorIndex initializes that bool.)
at::Tensor index_tensor_with(const at::Tensor& self, const std::vector<c10::IValue>& idx) {
  int64_t specified = 0;
  bool seen_ellipsis = false;
  for (const auto& v : idx) {
    if (!is_index_kind(v))
      throw Error(
          "operator.getitem: only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
          "are valid indices, got " +
          python_type_name(v));
    if (is_ellipsis(v)) {
      if (seen_ellipsis) throw Error("operator.getitem: an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    } else if (v.isTensor() &&
               (v.toTensor().scalar_type() == at::kBool || v.toTensor().scalar_type() == at::kByte)) {
      specified += v.toTensor().dim();
    } else if (!v.isNone() && !v.isBool()) {
      ++specified;
    }
  }
  if (specified > self.dim())
    throw Error("operator.getitem: IndexError: too many indices for tensor of dimension " +
                std::to_string(self.dim()));
  at::Tensor result = self;
  int64_t dim = 0;
  c10::List<c10::optional<at::Tensor>> advanced;
  auto record = [&](at::Tensor t) {
    while (static_cast<int64_t>(advanced.size()) <= dim) advanced.push_back(c10::nullopt);
    advanced.set(static_cast<size_t>(dim), std::move(t));
    ++dim;
  };
  for (const auto& v : idx) {
    if (v.isNone()) {
      result = result.unsqueeze(dim++);
    } else if (v.isBool()) {
      result = result.unsqueeze(dim);
      record(v.toBool() ? at::zeros({1}, at::kLong) : at::empty({0}, at::kLong));
    } else if (v.isInt()) {
      const int64_t size = result.size(dim), i = v.toInt();
      if (i < -size || i >= size)
        throw Error("operator.getitem: IndexError: index " + std::to_string(i) +
                    " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                    std::to_string(size));
      result = result.select(dim, i);
    } else if (is_ellipsis(v)) {
      dim += self.dim() - specified;
    } else if (is_slice(v)) {
      auto p = slice_parts(v);
      auto start = slice_part(p[0]), stop = slice_part(p[1]), step = slice_part(p[2]);
      const int64_t st = step.value_or(1);
      if (st == 0) throw Error("operator.getitem: ValueError: slice step cannot be zero");
      if (st < 0) throw Error("operator.getitem: ValueError: step must be greater than zero");
      result = result.slice(dim, start.value_or(0), stop.value_or(std::numeric_limits<int64_t>::max()), st);
      ++dim;
    } else {
      record(index_tensor(v));
    }
  }
  if (advanced.empty()) return result.alias();
  return at::index(result, advanced);
}

// Python's PySlice_AdjustIndices: the positions a slice selects in a sequence.
std::vector<int64_t> slice_positions(const c10::IValue& s, int64_t len) {
  auto p = slice_parts(s);
  auto start = slice_part(p[0]), stop = slice_part(p[1]), step_opt = slice_part(p[2]);
  const int64_t step = step_opt.value_or(1);
  if (step == 0) throw Error("operator.getitem: slice step cannot be zero");
  int64_t lo, hi;
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt, int64_t lower, int64_t upper) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = lower;
    } else if (x >= len) {
      x = upper;
    }
    return x;
  };
  if (step > 0) {
    lo = adjust(start, 0, 0, len);
    hi = adjust(stop, len, 0, len);
  } else {
    lo = adjust(start, len - 1, -1, len - 1);
    hi = adjust(stop, -1, -1, len - 1);
  }
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) out.push_back(i);
  else
    for (int64_t i = lo; i > hi; i += step) out.push_back(i);
  return out;
}

int64_t sequence_position(const c10::IValue& idx, int64_t len, const char* what) {
  int64_t i = 0;
  if (idx.isInt() || idx.isBool())
    i = to_int(kFn, idx);
  else if (idx.isTensor() && idx.toTensor().numel() == 1 && !idx.toTensor().is_floating_point())
    i = idx.toTensor().item().toLong();
  else
    throw Error(std::string("operator.getitem: ") + what + " indices must be integers or slices, not " +
                python_type_name(idx));
  if (i < 0) i += len;
  if (i < 0 || i >= len)
    throw Error(std::string("operator.getitem: IndexError: ") + what + " index out of range");
  return i;
}

c10::IValue getitem(const c10::IValue& obj, const c10::IValue& idx) {
  if (obj.isTensor()) {
    if (idx.isTuple() || list_as_tuple(idx)) return index_tensor_with(obj.toTensor(), sequence_items(idx));
    return index_tensor_with(obj.toTensor(), {idx});
  }
  if (obj.isTuple()) {
    const auto& e = obj.toTupleRef().elements();
    const int64_t n = static_cast<int64_t>(e.size());
    if (is_slice(idx)) {
      std::vector<c10::IValue> out;
      for (int64_t i : slice_positions(idx, n)) out.push_back(e[static_cast<size_t>(i)]);
      return c10::ivalue::Tuple::create(std::move(out));
    }
    return e[static_cast<size_t>(sequence_position(idx, n, "tuple"))];
  }
  if (obj.isList()) {
    c10::List<c10::IValue> l = obj.toList();
    const int64_t n = static_cast<int64_t>(l.size());
    if (is_slice(idx)) {
      c10::impl::GenericList out(l.elementType());
      for (int64_t i : slice_positions(idx, n)) out.push_back(l.get(static_cast<size_t>(i)));
      return out;
    }
    return l.get(static_cast<size_t>(sequence_position(idx, n, "list")));
  }
  if (obj.isGenericDict()) {
    auto d = obj.toGenericDict();
    for (const auto& kv : d)
      if (python_equal(kv.key(), idx)) return kv.value();
    throw Error("operator.getitem: KeyError: the dict has no key of type " + python_type_name(idx) +
                (idx.isString() ? " '" + idx.toStringRef() + "'" : std::string()));
  }
  if (obj.isString()) {
    const std::string& s = obj.toStringRef();
    const int64_t n = static_cast<int64_t>(s.size());
    if (is_slice(idx)) {
      std::string out;
      for (int64_t i : slice_positions(idx, n)) out += s[static_cast<size_t>(i)];
      return out;
    }
    return std::string(1, s[static_cast<size_t>(sequence_position(idx, n, "string"))]);
  }
  throw Error("operator.getitem: '" + python_type_name(obj) + "' object is not subscriptable");
}

}  // namespace

void register_getitem(Adapters& ad) {
  ad.function("operator.getitem", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    if (!kwargs.empty() || args.size() != 2)
      throw Error("operator.getitem expected 2 arguments, got " + std::to_string(args.size()));
    return getitem(args[0], args[1]);
  });
}

}  // namespace fx::runtime
