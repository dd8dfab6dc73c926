// Tensor methods whose Python signature has no ATen schema of the same shape:
// size()/stride() without a dim, dim(), to(...) in its Python forms, the dtype
// shorthands (float(), long(), ...), cpu(), is_contiguous(), tolist().
// Every other method resolves to aten::<name> with self first.

#include "internal.h"

namespace fx::runtime {

namespace {

int64_t wrap_dim(const std::string& fn, int64_t d, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  if (d < -n || d >= n)
    throw Error(fn + ": IndexError: Dimension out of range (expected to be in range of [" +
                std::to_string(-n) + ", " + std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
  return d < 0 ? d + n : d;
}

c10::IValue tolist(const at::Tensor& t) {
  if (t.dim() == 0) {
    at::Scalar s = t.item();
    if (s.isBoolean()) return s.toBool();
    if (s.isIntegral(false)) return s.toLong();
    if (s.isComplex()) return c10::complex<double>(s.toComplexDouble());
    return s.toDouble();
  }
  std::vector<c10::IValue> items;
  for (int64_t i = 0; i < t.size(0); ++i) items.push_back(tolist(t.select(0, i)));
  return list_ivalue(std::move(items));
}

}  // namespace

void register_tensor_methods(Adapters& ad) {
  for (const char* which : {"size", "stride"}) {
    const bool is_size = std::string(which) == "size";
    std::string fn = std::string("Tensor.") + which;
    ad.method(which, [fn, is_size](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      auto a = bind(fn, {req("self"), opt("dim", c10::IValue())}, args, kwargs);
      at::Tensor t = to_tensor(fn, a[0]);
      auto all = is_size ? t.sizes().vec() : t.strides().vec();
      if (a[1].isNone()) return c10::List<int64_t>(all);
      return all[static_cast<size_t>(wrap_dim(fn, to_int(fn, a[1]), t.dim()))];
    });
  }
  for (const char* name : {"dim", "ndimension"}) {
    ad.method(name, [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      auto a = bind("Tensor.dim", {req("self")}, args, kwargs);
      return to_tensor("Tensor.dim", a[0]).dim();
    });
  }
  for (const char* name : {"numel", "nelement"}) {
    ad.method(name, [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      auto a = bind("Tensor.numel", {req("self")}, args, kwargs);
      return to_tensor("Tensor.numel", a[0]).numel();
    });
  }
  ad.method("element_size", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("Tensor.element_size", {req("self")}, args, kwargs);
    return static_cast<int64_t>(to_tensor("Tensor.element_size", a[0]).element_size());
  });
  ad.method("is_contiguous", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("Tensor.is_contiguous", {req("self"), opt("memory_format", int64_t{0})}, args, kwargs);
    return to_tensor("Tensor.is_contiguous", a[0])
        .is_contiguous(static_cast<c10::MemoryFormat>(to_int("Tensor.is_contiguous", a[1])));
  });
  ad.method("tolist", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("Tensor.tolist", {req("self")}, args, kwargs);
    return tolist(to_tensor("Tensor.tolist", a[0]).cpu());
  });
  ad.method("cpu", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a =
        bind("Tensor.cpu",
             {req("self"), kwo("memory_format", int64_t{static_cast<int64_t>(c10::MemoryFormat::Preserve)})},
             args, kwargs);
    return to_tensor("Tensor.cpu", a[0]).cpu();
  });

  // Tensor.to(dtype | device | other, non_blocking=False, copy=False, *, memory_format)
  // and to(device=None, dtype=None, ...): Python's parser tries the forms in turn.
  ad.method("to", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    const std::string fn = "Tensor.to";
    if (args.empty()) throw Error(fn + ": missing self");
    at::Tensor self = to_tensor(fn, args[0]);
    std::optional<c10::Device> device;
    std::optional<c10::ScalarType> dtype;
    bool non_blocking = false, copy = false;
    c10::optional<c10::MemoryFormat> mf;
    size_t i = 1;
    auto take_device = [&](const c10::IValue& v) {
      if (v.isDevice())
        device = v.toDevice();
      else if (v.isString())
        device = c10::Device(v.toStringRef());
      else if (!v.isNone())
        type_error(fn, "expected a device, got " + python_type_name(v));
    };
    auto take_dtype = [&](const c10::IValue& v) {
      if (!v.isNone()) dtype = to_dtype(fn, v);
    };
    if (i < args.size()) {
      const c10::IValue& first = args[i];
      if (first.isTensor()) {
        device = first.toTensor().device();
        dtype = first.toTensor().scalar_type();
        ++i;
      } else if (first.isDevice() || first.isString()) {
        take_device(first);
        ++i;
        if (i < args.size() && dtype_of(args[i])) take_dtype(args[i++]);
      } else if (dtype_of(first)) {
        take_dtype(first);
        ++i;
      } else if (first.isNone()) {
        ++i;
      }
    }
    if (i < args.size()) non_blocking = to_bool(fn, args[i++]);
    if (i < args.size()) copy = to_bool(fn, args[i++]);
    if (i < args.size()) type_error(fn, "too many positional arguments");
    for (const auto& [k, v] : kwargs) {
      if (k == "device")
        take_device(v);
      else if (k == "dtype")
        take_dtype(v);
      else if (k == "non_blocking")
        non_blocking = to_bool(fn, v);
      else if (k == "copy")
        copy = to_bool(fn, v);
      else if (k == "memory_format") {
        if (!v.isNone()) mf = static_cast<c10::MemoryFormat>(to_int(fn, v));
      } else
        type_error(fn, "got an unexpected keyword argument '" + k + "'");
    }
    return self.to(device.value_or(self.device()), dtype.value_or(self.scalar_type()), non_blocking, copy,
                   mf);
  });

  struct Cast {
    const char* name;
    c10::ScalarType type;
  };
  static constexpr Cast kCasts[] = {
      {"float", at::kFloat},
      {"double", at::kDouble},
      {"half", at::kHalf},
      {"bfloat16", at::kBFloat16},
      {"int", at::kInt},
      {"long", at::kLong},
      {"short", at::kShort},
      {"char", at::kChar},
      {"byte", at::kByte},
      {"bool", at::kBool},
      {"cfloat", at::kComplexFloat},
      {"cdouble", at::kComplexDouble},
  };
  for (const Cast& c : kCasts) {
    std::string fn = std::string("Tensor.") + c.name;
    c10::ScalarType type = c.type;
    ad.method(c.name, [fn, type](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      auto a =
          bind(fn, {req("self"), kwo("memory_format", static_cast<int64_t>(c10::MemoryFormat::Preserve))},
               args, kwargs);
      return to_tensor(fn, a[0]).to(type, false, false, static_cast<c10::MemoryFormat>(to_int(fn, a[1])));
    });
  }
  // Tensor.type(dtype=None, non_blocking=False): with no dtype, the legacy
  // type name ('torch.FloatTensor', 'torch.cuda.LongTensor'); with a dtype or
  // such a name, the tensor converted to it (itself when it already is).
  ad.method("type", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    const std::string fn = "Tensor.type";
    auto a = bind(fn, {req("self"), opt("dtype", c10::IValue()), opt("non_blocking", false)}, args, kwargs);
    at::Tensor t = to_tensor(fn, a[0]);
    const bool non_blocking = to_bool(fn, a[2]);
    auto legacy_name = [](c10::ScalarType type, bool cuda) {
      return std::string("torch.") + (cuda ? "cuda." : "") + c10::toString(type) + "Tensor";
    };
    if (a[1].isNone()) return legacy_name(t.scalar_type(), t.is_cuda());
    if (!a[1].isString()) return t.to(to_dtype(fn, a[1]), non_blocking);
    const std::string& name = a[1].toStringRef();
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      const auto type = static_cast<c10::ScalarType>(i);
      for (bool cuda : {false, true}) {
        if (name != legacy_name(type, cuda)) continue;
        if (type == t.scalar_type() && cuda == t.is_cuda()) return t;
        return t.to(cuda ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU), type, non_blocking);
      }
    }
    throw Error(fn + "(): invalid type: '" + name + "'");
  });
}

}  // namespace fx::runtime
