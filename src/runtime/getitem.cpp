// operator.getitem: tensor indexing through at::indexing, and Python's
// indexing of tuples, lists, dicts and strings.
//
// Slices and Ellipsis arrive as the capsules of fx::slice_ivalue /
// fx::ellipsis_ivalue (to_ivalue makes them from fx::Slice / fx::Ellipsis).

#include "internal.h"

#include <ATen/TensorIndexing.h>

#include <limits>

namespace fx::runtime {

namespace {

const char* kFn = "operator.getitem";

std::optional<int64_t> slice_part(const c10::IValue& v) {
  if (v.isNone()) return std::nullopt;
  if (v.isInt() || v.isBool()) return to_int(kFn, v);
  if (v.isTensor() && v.toTensor().numel() == 1 && !v.toTensor().is_floating_point())
    return v.toTensor().item().toLong();
  throw Error("operator.getitem: slice indices must be integers or None, got " + python_type_name(v));
}

at::indexing::TensorIndex tensor_index(const c10::IValue& v) {
  using at::indexing::Slice;
  using at::indexing::TensorIndex;
  if (v.isNone()) return TensorIndex(at::indexing::None);
  if (v.isBool()) return TensorIndex(v.toBool());
  if (v.isInt()) return TensorIndex(v.toInt());
  if (is_ellipsis(v)) return TensorIndex(at::indexing::Ellipsis);
  if (is_slice(v)) {
    auto p = slice_parts(v);
    auto start = slice_part(p[0]), stop = slice_part(p[1]), step = slice_part(p[2]);
    if (step && *step == 0) throw Error("operator.getitem: slice step cannot be zero");
    auto o = [](std::optional<int64_t> x) { return x ? c10::optional<int64_t>(*x) : c10::optional<int64_t>(); };
    return TensorIndex(Slice(o(start), o(stop), o(step)));
  }
  if (v.isTensor()) return TensorIndex(v.toTensor());
  if (v.isIntList()) return TensorIndex(at::tensor(v.toIntVector(), at::kLong));
  if (v.isBoolList()) {
    auto b = v.toBoolList();
    std::vector<uint8_t> bytes(b.begin(), b.end());
    return TensorIndex(at::tensor(bytes, at::kBool));
  }
  if (v.isList()) {  // a list of ints and tensors: an index tensor, as Python makes
    std::vector<at::Tensor> parts;
    for (const auto& e : v.toListRef()) {
      if (e.isInt()) parts.push_back(at::scalar_tensor(e.toInt(), at::kLong));
      else if (e.isTensor()) parts.push_back(e.toTensor());
      else throw Error("operator.getitem: a list index must hold ints or tensors, got " + python_type_name(e));
    }
    return TensorIndex(at::stack(parts));
  }
  throw Error("operator.getitem: only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
              "valid indices, got " + python_type_name(v));
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
  if (idx.isInt() || idx.isBool()) i = to_int(kFn, idx);
  else if (idx.isTensor() && idx.toTensor().numel() == 1 && !idx.toTensor().is_floating_point())
    i = idx.toTensor().item().toLong();
  else
    throw Error(std::string("operator.getitem: ") + what + " indices must be integers or slices, not " +
                python_type_name(idx));
  if (i < 0) i += len;
  if (i < 0 || i >= len) throw Error(std::string("operator.getitem: IndexError: ") + what + " index out of range");
  return i;
}

c10::IValue getitem(const c10::IValue& obj, const c10::IValue& idx) {
  if (obj.isTensor()) {
    std::vector<at::indexing::TensorIndex> indices;
    if (idx.isTuple()) {
      for (const auto& e : idx.toTupleRef().elements()) indices.push_back(tensor_index(e));
    } else {
      indices.push_back(tensor_index(idx));
    }
    return obj.toTensor().index(indices);
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
    if (!kwargs.empty() || args.size() != 2) throw Error("operator.getitem expected 2 arguments, got " +
                                                         std::to_string(args.size()));
    return getitem(args[0], args[1]);
  });
}

}  // namespace fx::runtime
