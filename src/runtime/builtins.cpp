// builtins.getattr / len / int / float / bool / abs / min / max, and math.*:
// Python built-ins on runtime values.

#include "internal.h"

#include <cmath>
#include <limits>

namespace fx::runtime {

namespace {

c10::IValue tensor_attr(const at::Tensor& t, const std::string& name, bool* found) {
  *found = true;
  if (name == "shape") return c10::List<int64_t>(t.sizes().vec());
  if (name == "dtype") return dtype_ivalue(t.scalar_type());
  if (name == "device") return t.device();
  if (name == "layout") return static_cast<int64_t>(t.layout());
  if (name == "ndim") return t.dim();
  if (name == "T") {  // numpy_T: all dims reversed
    std::vector<int64_t> dims;
    for (int64_t i = t.dim() - 1; i >= 0; --i) dims.push_back(i);
    return t.permute(dims);
  }
  if (name == "mT") return t.mT();
  if (name == "H") return t.dim() < 2 ? t.conj() : t.adjoint();
  if (name == "mH") return t.mH();
  if (name == "is_cuda") return t.is_cuda();
  if (name == "is_sparse") return t.is_sparse();
  if (name == "is_quantized") return t.is_quantized();
  if (name == "is_meta") return t.is_meta();
  if (name == "is_leaf") return t.is_leaf();
  if (name == "requires_grad") return t.requires_grad();
  if (name == "data") return t.detach();
  if (name == "grad") return t.grad().defined() ? c10::IValue(t.grad()) : c10::IValue();
  if (name == "real") return at::real(t);
  if (name == "imag") return at::imag(t);
  if (name == "itemsize") return static_cast<int64_t>(t.element_size());
  *found = false;
  return {};
}

c10::IValue getattr(const c10::IValue& obj, const std::string& name, const c10::IValue* dflt) {
  bool found = false;
  c10::IValue r;
  if (obj.isTensor()) {
    r = tensor_attr(obj.toTensor(), name, &found);
  } else if (obj.isTuple()) {  // named tuples (torch.return_types.max: values, indices)
    const auto& tup = obj.toTupleRef();
    if (tup.type() && tup.type()->schema()) {
      const auto& args = tup.type()->schema()->arguments();
      for (size_t i = 0; i < args.size() && i < tup.elements().size(); ++i)
        if (args[i].name() == name) {
          r = tup.elements()[i];
          found = true;
        }
    }
  } else if (auto dtype = dtype_of(obj)) {  // torch.dtype's attributes
    found = true;
    if (name == "is_floating_point")
      r = c10::isFloatingType(*dtype);
    else if (name == "is_complex")
      r = c10::isComplexType(*dtype);
    else if (name == "is_signed")
      r = c10::isSignedType(*dtype);
    else if (name == "itemsize")
      r = static_cast<int64_t>(c10::elementSize(*dtype));
    else
      found = false;
  } else if (obj.isDevice()) {
    found = true;
    if (name == "type")
      r = std::string(c10::DeviceTypeName(obj.toDevice().type(), /*lower_case=*/true));
    else if (name == "index")
      r = obj.toDevice().has_index() ? c10::IValue(int64_t{obj.toDevice().index()}) : c10::IValue();
    else
      found = false;
  }
  if (found) return r;
  if (dflt) return *dflt;
  throw Error(
      "builtins.getattr: AttributeError: '" + python_type_name(obj) + "' object has no attribute '" + name +
      "' (the runtime knows Tensor attributes shape, dtype, device, layout, ndim, T, mT, H, mH, is_cuda, "
      "requires_grad, data, grad, real, imag, ... and named-tuple fields)");
}

int64_t py_len(const c10::IValue& v) {
  if (v.isTensor()) {
    if (v.toTensor().dim() == 0) throw Error("builtins.len: TypeError: len() of a 0-d tensor");
    return v.toTensor().size(0);
  }
  if (v.isTuple()) return static_cast<int64_t>(v.toTupleRef().elements().size());
  if (v.isList()) return static_cast<int64_t>(v.toListRef().size());
  if (v.isGenericDict()) return static_cast<int64_t>(v.toGenericDict().size());
  if (v.isString()) return static_cast<int64_t>(v.toStringRef().size());
  throw Error("builtins.len: TypeError: object of type '" + python_type_name(v) + "' has no len()");
}

// A number from a number or a one-element tensor (Python's __float__/__int__).
c10::IValue number_of(const std::string& fn, const c10::IValue& v) {
  if (is_number(v)) return v;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1) throw Error(fn + ": only one element tensors can be converted to Python scalars");
    at::Scalar s = t.item();
    if (s.isBoolean()) return s.toBool();
    if (s.isIntegral(false)) return s.toLong();
    if (s.isFloatingPoint()) return s.toDouble();
  }
  throw Error(fn + ": TypeError: must be real number, not " + python_type_name(v));
}

int64_t float_to_int(const std::string& fn, double d) {
  if (std::isnan(d)) throw Error(fn + ": ValueError: cannot convert float NaN to integer");
  if (std::isinf(d)) throw Error(fn + ": OverflowError: cannot convert float infinity to integer");
  if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18) throw Error(fn + ": integer overflow");
  return static_cast<int64_t>(d);
}

void nargs(const std::string& fn, const std::vector<c10::IValue>& args, const IValueKwargs& kwargs, size_t lo,
           size_t hi) {
  if (!kwargs.empty()) throw Error(fn + " takes no keyword arguments");
  if (args.size() < lo || args.size() > hi)
    throw Error(fn + " expected " +
                (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                " arguments, got " + std::to_string(args.size()));
}

}  // namespace

void register_builtins(Adapters& ad) {
  ad.function("builtins.getattr", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
    nargs("builtins.getattr", args, kwargs, 2, 3);
    return getattr(args[0], to_str("builtins.getattr", args[1]), args.size() == 3 ? &args[2] : nullptr);
  });
  ad.function("builtins.len", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("builtins.len", args, kwargs, 1, 1);
    return py_len(args[0]);
  });
  ad.function("builtins.int", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("builtins.int", args, kwargs, 0, 1);
    if (args.empty()) return int64_t{0};
    if (args[0].isString()) {
      try {
        size_t pos = 0;
        int64_t v = std::stoll(args[0].toStringRef(), &pos);
        if (pos == args[0].toStringRef().size()) return v;
      } catch (const std::exception&) {
      }
      throw Error("builtins.int: ValueError: invalid literal for int(): '" + args[0].toStringRef() + "'");
    }
    c10::IValue n = number_of("builtins.int", args[0]);
    if (n.isDouble()) return float_to_int("builtins.int", n.toDouble());
    return to_int("builtins.int", n);
  });
  ad.function("builtins.float", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("builtins.float", args, kwargs, 0, 1);
    if (args.empty()) return 0.0;
    if (args[0].isString()) {
      std::string s = args[0].toStringRef();
      if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      try {
        size_t pos = 0;
        double v = std::stod(s, &pos);
        if (pos == s.size()) return v;
      } catch (const std::exception&) {
      }
      throw Error("builtins.float: ValueError: could not convert string to float: '" + s + "'");
    }
    return to_double("builtins.float", number_of("builtins.float", args[0]));
  });
  ad.function("builtins.bool", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("builtins.bool", args, kwargs, 0, 1);
    return args.empty() ? false : truth("builtins.bool", args[0]);
  });
  ad.function("builtins.abs", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("builtins.abs", args, kwargs, 1, 1);
    return resolve_function("operator.abs")->call(args, {});
  });
  for (const char* which : {"min", "max"}) {
    const bool is_max = std::string(which) == "max";
    ad.function(
        std::string("builtins.") + which,
        [is_max, which](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
          std::string fn = std::string("builtins.") + which;
          if (!kwargs.empty()) throw Error(fn + ": keyword arguments are not supported");
          std::vector<c10::IValue> items = args.size() == 1 ? sequence_items(args[0]) : args;
          if (items.empty()) throw Error(fn + ": ValueError: arg is an empty sequence");
          auto less = resolve_function("operator.lt");
          c10::IValue best = items[0];
          for (size_t i = 1; i < items.size(); ++i) {
            c10::IValue r = is_max ? less->call({best, items[i]}, {}) : less->call({items[i], best}, {});
            if (truth(fn, r)) best = items[i];
          }
          return best;
        });
  }

  // math.*: on Python numbers (and one-element tensors, via __float__).
  auto math1 = [&ad](const char* name, double (*f)(double), bool domain_positive = false) {
    std::string fn = std::string("math.") + name;
    ad.function(
        fn, [fn, f, domain_positive](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
          nargs(fn, args, kwargs, 1, 1);
          double x = to_double(fn, number_of(fn, args[0]));
          if (domain_positive && x < 0) throw Error(fn + ": ValueError: math domain error");
          return f(x);
        });
  };
  math1(
      "sqrt", [](double x) { return std::sqrt(x); }, true);
  math1("exp", [](double x) { return std::exp(x); });
  math1("sin", [](double x) { return std::sin(x); });
  math1("cos", [](double x) { return std::cos(x); });
  math1("tan", [](double x) { return std::tan(x); });
  math1("tanh", [](double x) { return std::tanh(x); });
  math1("atan", [](double x) { return std::atan(x); });
  math1("fabs", [](double x) { return std::fabs(x); });
  math1("erf", [](double x) { return std::erf(x); });
  ad.function("math.log", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("math.log", args, kwargs, 1, 2);
    double x = to_double("math.log", number_of("math.log", args[0]));
    if (x <= 0) throw Error("math.log: ValueError: math domain error");
    if (args.size() == 1) return std::log(x);
    double b = to_double("math.log", number_of("math.log", args[1]));
    if (b <= 0) throw Error("math.log: ValueError: math domain error");
    return std::log(x) / std::log(b);
  });
  for (auto [name, f] :
       {std::pair<const char*, double (*)(double)>{"log2", [](double x) { return std::log2(x); }},
        {"log10", [](double x) { return std::log10(x); }}}) {
    std::string fn = std::string("math.") + name;
    auto g = f;
    ad.function(fn, [fn, g](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      nargs(fn, args, kwargs, 1, 1);
      double x = to_double(fn, number_of(fn, args[0]));
      if (x <= 0) throw Error(fn + ": ValueError: math domain error");
      return g(x);
    });
  }
  // floor/ceil/trunc return ints.
  for (auto [name, f] :
       {std::pair<const char*, double (*)(double)>{"floor", [](double x) { return std::floor(x); }},
        {"ceil", [](double x) { return std::ceil(x); }},
        {"trunc", [](double x) { return std::trunc(x); }}}) {
    std::string fn = std::string("math.") + name;
    auto g = f;
    ad.function(fn, [fn, g](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      nargs(fn, args, kwargs, 1, 1);
      c10::IValue n = number_of(fn, args[0]);
      if (!n.isDouble()) return to_int(fn, n);
      return float_to_int(fn, g(n.toDouble()));
    });
  }
  ad.function("math.pow", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    nargs("math.pow", args, kwargs, 2, 2);
    double x = to_double("math.pow", number_of("math.pow", args[0]));
    double y = to_double("math.pow", number_of("math.pow", args[1]));
    if (x == 0.0 && y < 0) throw Error("math.pow: ValueError: math domain error");
    if (x < 0 && std::isfinite(y) && y != std::floor(y))
      throw Error("math.pow: ValueError: math domain error");
    return std::pow(x, y);
  });
  for (auto [name, f] :
       {std::pair<const char*, bool (*)(double)>{"isnan", [](double x) { return std::isnan(x); }},
        {"isinf", [](double x) { return std::isinf(x); }},
        {"isfinite", [](double x) { return std::isfinite(x); }}}) {
    std::string fn = std::string("math.") + name;
    auto g = f;
    ad.function(fn, [fn, g](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      nargs(fn, args, kwargs, 1, 1);
      return g(to_double(fn, number_of(fn, args[0])));
    });
  }
}

}  // namespace fx::runtime
