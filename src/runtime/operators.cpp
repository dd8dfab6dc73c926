// operator.*: Python's operators. On tensors, the ATen op the Tensor dunder
// calls (reflected forms included); on Python numbers (int, float, bool),
// Python's semantics exactly.

#include "internal.h"

#include <array>
#include <cmath>
#include <complex>
#include <limits>

namespace fx::runtime {

namespace {

#define FX_ATEN(name)                                                     \
  ([]() -> const ::fx::Callable& {                                        \
    static const auto c = ::fx::resolve_function("torch.ops.aten." name); \
    return *c;                                                            \
  }())

enum class Op {
  add,
  sub,
  mul,
  truediv,
  floordiv,
  mod,
  pow,
  lshift,
  rshift,
  and_,
  or_,
  xor_,
  matmul,
  eq,
  ne,
  lt,
  le,
  gt,
  ge  // the last: tensor_aten's table is sized by it
};

struct OpInfo {
  Op op;
  const char* name;    // operator.<name>
  const char* symbol;  // for messages
};

constexpr OpInfo kOps[] = {
    {Op::add, "add", "+"},
    {Op::sub, "sub", "-"},
    {Op::mul, "mul", "*"},
    {Op::truediv, "truediv", "/"},
    {Op::floordiv, "floordiv", "//"},
    {Op::mod, "mod", "%"},
    {Op::pow, "pow", "**"},
    {Op::lshift, "lshift", "<<"},
    {Op::rshift, "rshift", ">>"},
    {Op::and_, "and_", "&"},
    {Op::or_, "or_", "|"},
    {Op::xor_, "xor", "^"},
    {Op::matmul, "matmul", "@"},
    {Op::eq, "eq", "=="},
    {Op::ne, "ne", "!="},
    {Op::lt, "lt", "<"},
    {Op::le, "le", "<="},
    {Op::gt, "gt", ">"},
    {Op::ge, "ge", ">="},
};

bool is_comparison(Op op) { return op >= Op::eq; }

[[noreturn]] void unsupported(const OpInfo& o, const c10::IValue& a, const c10::IValue& b) {
  throw Error(std::string("operator.") + o.name + ": unsupported operand type(s) for " + o.symbol + ": '" +
              python_type_name(a) + "' and '" + python_type_name(b) + "'");
}
[[noreturn]] void zero_division(const OpInfo& o, const std::string& what) {
  throw Error(std::string("operator.") + o.name + ": ZeroDivisionError: " + what);
}
[[noreturn]] void overflow(const OpInfo& o) {
  throw Error(std::string("operator.") + o.name +
              ": integer overflow (Python ints are unbounded; fxcpp's runtime ints are 64-bit)");
}

int64_t as_int(const c10::IValue& v) { return v.isBool() ? (v.toBool() ? 1 : 0) : v.toInt(); }

double float_floordiv(double a, double b) {  // CPython float_divmod
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) div -= 1.0;
  }
  if (div != 0.0) {
    double f = std::floor(div);
    if (div - f > 0.5) f += 1.0;
    return f;
  }
  return std::copysign(0.0, a / b);
}

double float_mod(double a, double b) {  // CPython float_rem
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

c10::IValue float_pow(const OpInfo& o, double a, double b) {
  if (a == 0.0 && b < 0.0) zero_division(o, "0.0 cannot be raised to a negative power");
  if (a < 0.0 && std::isfinite(b) && b != std::floor(b))
    return c10::complex<double>(std::pow(std::complex<double>(a, 0.0), std::complex<double>(b, 0.0)));
  return std::pow(a, b);
}

bool py_equal(const c10::IValue& a, const c10::IValue& b);

// Python's six comparisons of two numbers; nullopt for any other operator.
template <class T>
std::optional<bool> compare(Op op, T x, T y) {
  switch (op) {
    case Op::eq:
      return x == y;
    case Op::ne:
      return x != y;
    case Op::lt:
      return x < y;
    case Op::le:
      return x <= y;
    case Op::gt:
      return x > y;
    case Op::ge:
      return x >= y;
    default:
      return std::nullopt;
  }
}

// Python semantics on int/float/bool operands.
c10::IValue number_binop(const OpInfo& o, const c10::IValue& a, const c10::IValue& b) {
  const bool both_bool = a.isBool() && b.isBool();
  if (both_bool && (o.op == Op::and_ || o.op == Op::or_ || o.op == Op::xor_)) {
    bool x = a.toBool(), y = b.toBool();
    return o.op == Op::and_ ? (x && y) : o.op == Op::or_ ? (x || y) : (x != y);
  }
  if (a.isDouble() || b.isDouble()) {
    const double x = to_double(o.name, a), y = to_double(o.name, b);
    switch (o.op) {
      case Op::add:
        return x + y;
      case Op::sub:
        return x - y;
      case Op::mul:
        return x * y;
      case Op::truediv:
        if (y == 0.0) zero_division(o, "float division by zero");
        return x / y;
      case Op::floordiv:
        if (y == 0.0) zero_division(o, "float floor division by zero");
        return float_floordiv(x, y);
      case Op::mod:
        if (y == 0.0) zero_division(o, "float modulo");
        return float_mod(x, y);
      case Op::pow:
        return float_pow(o, x, y);
      default:
        if (auto c = compare(o.op, x, y)) return *c;
        unsupported(o, a, b);
    }
  }
  const int64_t x = as_int(a), y = as_int(b);
  int64_t r = 0;
  switch (o.op) {
    case Op::add:
      if (__builtin_add_overflow(x, y, &r)) overflow(o);
      return r;
    case Op::sub:
      if (__builtin_sub_overflow(x, y, &r)) overflow(o);
      return r;
    case Op::mul:
      if (__builtin_mul_overflow(x, y, &r)) overflow(o);
      return r;
    case Op::truediv:
      if (y == 0) zero_division(o, "division by zero");
      return static_cast<double>(x) / static_cast<double>(y);
    case Op::floordiv: {
      if (y == 0) zero_division(o, "integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow(o);
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return q;
    }
    case Op::mod: {
      if (y == 0) zero_division(o, "integer division or modulo by zero");
      if (y == -1) return int64_t{0};
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return m;
    }
    case Op::pow: {
      if (y < 0) return float_pow(o, static_cast<double>(x), static_cast<double>(y));
      int64_t result = 1, base = x, e = y;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(result, base, &result)) overflow(o);
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow(o);
      }
      return result;
    }
    case Op::lshift:
      if (y < 0) throw Error("operator.lshift: ValueError: negative shift count");
      if (x == 0) return int64_t{0};
      if (y >= 63 || (x > 0 ? x > (std::numeric_limits<int64_t>::max() >> y)
                            : x < (std::numeric_limits<int64_t>::min() >> y)))
        overflow(o);
      return static_cast<int64_t>(static_cast<uint64_t>(x) << y);
    case Op::rshift:
      if (y < 0) throw Error("operator.rshift: ValueError: negative shift count");
      return y >= 64 ? (x < 0 ? int64_t{-1} : int64_t{0}) : (x >> y);
    case Op::and_:
      return x & y;
    case Op::or_:
      return x | y;
    case Op::xor_:
      return x ^ y;
    default:
      if (auto c = compare(o.op, x, y)) return *c;
      unsupported(o, a, b);
  }
}

// The ATen op tensor_binop calls when the left operand is a tensor.
const char* tensor_aten_name(Op op) {
  switch (op) {
    case Op::add:
      return "add";
    case Op::sub:
      return "sub";
    case Op::mul:
      return "mul";
    case Op::truediv:
      return "div";
    case Op::floordiv:
      return "floor_divide";
    case Op::mod:
      return "remainder";
    case Op::pow:
      return "pow";
    case Op::lshift:
      return "__lshift__";
    case Op::rshift:
      return "__rshift__";
    case Op::and_:
      return "__and__";
    case Op::or_:
      return "__or__";
    case Op::xor_:
      return "__xor__";
    case Op::matmul:
      return "matmul";
    case Op::eq:
      return "eq";
    case Op::ne:
      return "ne";
    case Op::lt:
      return "lt";
    case Op::le:
      return "le";
    case Op::gt:
      return "gt";
    case Op::ge:
      return "ge";
  }
  return nullptr;
}

// Its callable, resolved once per op.
const Callable& tensor_aten(Op op) {
  static const auto callables = [] {
    std::array<std::shared_ptr<const Callable>, static_cast<size_t>(Op::ge) + 1> out;
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = resolve_function(std::string("torch.ops.aten.") + tensor_aten_name(static_cast<Op>(i)));
    return out;
  }();
  return *callables[static_cast<size_t>(op)];
}

// a <op> b where a or b is a tensor: what torch.Tensor's dunders call.
c10::IValue tensor_binop(const OpInfo& o, const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor()) return tensor_aten(o.op).call({a, b}, {});
  // Reflected: b is the tensor, a a number (Tensor.__radd__, __rsub__, ...).
  if (!is_number(a)) unsupported(o, a, b);
  switch (o.op) {
    case Op::add:
      return FX_ATEN("add").call({b, a}, {});
    case Op::mul:
      return FX_ATEN("mul").call({b, a}, {});
    case Op::sub:
      return FX_ATEN("rsub").call({b, a}, {});
    case Op::truediv: {  // Tensor.__rdiv__: self.reciprocal() * other
      c10::IValue r = FX_ATEN("reciprocal").call({b}, {});
      return FX_ATEN("mul").call({r, a}, {});
    }
    case Op::floordiv:
      return FX_ATEN("floor_divide").call({wrapped_scalar(a), b}, {});
    case Op::mod:
      return FX_ATEN("remainder").call({a, b}, {});
    case Op::pow:
      return FX_ATEN("pow").call({a, b}, {});
    case Op::lshift:
      return FX_ATEN("bitwise_left_shift").call({a, b}, {});
    case Op::rshift:
      return FX_ATEN("bitwise_right_shift").call({a, b}, {});
    case Op::and_:
      return FX_ATEN("__and__").call({b, a}, {});
    case Op::or_:
      return FX_ATEN("__or__").call({b, a}, {});
    case Op::xor_:
      return FX_ATEN("__xor__").call({b, a}, {});
    case Op::eq:
      return FX_ATEN("eq").call({b, a}, {});
    case Op::ne:
      return FX_ATEN("ne").call({b, a}, {});
    case Op::lt:
      return FX_ATEN("gt").call({b, a}, {});
    case Op::le:
      return FX_ATEN("ge").call({b, a}, {});
    case Op::gt:
      return FX_ATEN("lt").call({b, a}, {});
    case Op::ge:
      return FX_ATEN("le").call({b, a}, {});
    case Op::matmul:
      break;
  }
  unsupported(o, a, b);
}

// A site whose left operand is a node: while it holds a tensor, binop is
// tensor_binop's first branch, the ATen op on (a, b); specialize that.
std::shared_ptr<const SpecializedCall> specialize_binop(const OpInfo& o, const std::vector<SiteArg>& args) {
  if (args.size() != 2 || args[0].slot < 0) return nullptr;
  return resolve_function(std::string("torch.ops.aten.") + tensor_aten_name(o.op))->specialize(args);
}

c10::IValue make_sequence_like(const c10::IValue& like, std::vector<c10::IValue> items) {
  if (like.isTuple()) return c10::ivalue::Tuple::create(std::move(items));
  c10::impl::GenericList l(like.toList().elementType());
  for (auto& v : items) l.push_back(std::move(v));
  return l;
}

bool py_equal(const c10::IValue& a, const c10::IValue& b) {
  if (is_number(a) && is_number(b)) {
    if (a.isDouble() || b.isDouble()) return to_double("", a) == to_double("", b);
    return as_int(a) == as_int(b);
  }
  if (a.isNone() || b.isNone()) return a.isNone() && b.isNone();
  if (a.isString() && b.isString()) return a.toStringRef() == b.toStringRef();
  if (a.isDevice() && b.isDevice()) return a.toDevice() == b.toDevice();
  if ((a.isTuple() && b.isTuple()) || (a.isList() && b.isList())) {
    auto x = sequence_items(a), y = sequence_items(b);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!py_equal(x[i], y[i])) return false;
    return true;
  }
  if (a.isTensor() && b.isTensor()) return a.toTensor().is_same(b.toTensor());
  return a.isSameIdentity(b);
}

c10::IValue binop(const OpInfo& o, const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() || b.isTensor()) {
    if (a.isTensor() || is_number(b) || is_number(a)) return tensor_binop(o, a, b);
  }
  if (is_number(a) && is_number(b)) return number_binop(o, a, b);
  if (o.op == Op::eq) return py_equal(a, b);
  if (o.op == Op::ne) return !py_equal(a, b);
  // Sequences and strings: concatenation, repetition, ordering of strings.
  if (o.op == Op::add && ((a.isTuple() && b.isTuple()) || (a.isList() && b.isList()))) {
    auto x = sequence_items(a), y = sequence_items(b);
    x.insert(x.end(), y.begin(), y.end());
    return make_sequence_like(a, std::move(x));
  }
  if (o.op == Op::add && a.isString() && b.isString()) return a.toStringRef() + b.toStringRef();
  if (o.op == Op::mul && (is_sequence(a) || a.isString()) && (b.isInt() || b.isBool())) {
    const int64_t n = as_int(b);
    if (a.isString()) {
      std::string s;
      for (int64_t i = 0; i < n; ++i) s += a.toStringRef();
      return s;
    }
    auto x = sequence_items(a);
    std::vector<c10::IValue> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), x.begin(), x.end());
    return make_sequence_like(a, std::move(out));
  }
  if (o.op == Op::mul && (is_sequence(b) || b.isString()) && (a.isInt() || a.isBool())) return binop(o, b, a);
  if (is_comparison(o.op) && ((a.isTuple() && b.isTuple()) || (a.isList() && b.isList()))) {
    // Python's lexicographic order: the first items that differ decide (their
    // own comparison's result, as CPython returns it), else the lengths.
    const auto x = sequence_items(a), y = sequence_items(b);
    size_t i = 0;
    while (i < x.size() && i < y.size() && py_equal(x[i], y[i])) ++i;
    if (i < x.size() && i < y.size()) return binop(o, x[i], y[i]);
    switch (o.op) {
      case Op::lt:
        return x.size() < y.size();
      case Op::le:
        return x.size() <= y.size();
      case Op::gt:
        return x.size() > y.size();
      default:
        return x.size() >= y.size();
    }
  }
  if (is_comparison(o.op) && a.isString() && b.isString()) {
    int c = a.toStringRef().compare(b.toStringRef());
    switch (o.op) {
      case Op::lt:
        return c < 0;
      case Op::le:
        return c <= 0;
      case Op::gt:
        return c > 0;
      case Op::ge:
        return c >= 0;
      default:
        break;
    }
  }
  unsupported(o, a, b);
}

c10::IValue two_args(const char* name, std::vector<c10::IValue>& args, IValueKwargs& kwargs, size_t n = 2) {
  if (!kwargs.empty()) throw Error(std::string("operator.") + name + " takes no keyword arguments");
  if (args.size() != n)
    throw Error(std::string("operator.") + name + " expected " + std::to_string(n) + " argument" +
                (n == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
  return c10::IValue();
}

}  // namespace

bool python_equal(const c10::IValue& a, const c10::IValue& b) { return py_equal(a, b); }

void register_operator_functions(Adapters& ad) {
  for (const OpInfo& o : kOps) {
    const OpInfo* info = &o;
    ad.function(
        std::string("operator.") + o.name,
        [info](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
          two_args(info->name, args, kwargs);
          return binop(*info, args[0], args[1]);
        },
        [info](const std::vector<SiteArg>& args) { return specialize_binop(*info, args); });
  }
  // In-place forms: on tensors the in-place ATen op (x += y mutates x), on
  // immutable Python values the plain operator.
  struct Inplace {
    const char* name;
    const char* aten;
    Op op;
  };
  static constexpr Inplace kInplace[] = {
      {"iadd", "add_", Op::add},
      {"isub", "sub_", Op::sub},
      {"imul", "mul_", Op::mul},
      {"itruediv", "div_", Op::truediv},
      {"ifloordiv", "floor_divide_", Op::floordiv},
      {"imod", "remainder_", Op::mod},
      {"ipow", "pow_", Op::pow},
      {"iand", "__iand__", Op::and_},
      {"ior", "__ior__", Op::or_},
      {"ixor", "__ixor__", Op::xor_},
      {"ilshift", "__ilshift__", Op::lshift},
      {"irshift", "__irshift__", Op::rshift},
  };
  for (const Inplace& ip : kInplace) {
    const Inplace* p = &ip;
    const OpInfo* info = nullptr;
    for (const OpInfo& o : kOps)
      if (o.op == ip.op) info = &o;
    ad.function(std::string("operator.") + ip.name,
                [p, info](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
                  two_args(p->name, args, kwargs);
                  if (args[0].isTensor()) {
                    call_aten(p->aten, {args[0], args[1]});
                    return args[0];
                  }
                  if (args[0].isList() && p->op == Op::add) {  // list += iterable extends in place
                    c10::List<c10::IValue> l = args[0].toList();
                    for (auto& v : sequence_items(args[1])) l.push_back(v);
                    return args[0];
                  }
                  return binop(*info, args[0], args[1]);
                });
  }

  auto unary = [&ad](const char* name, std::function<c10::IValue(const c10::IValue&)> fn) {
    std::string n = name;
    ad.function("operator." + n, [n, fn](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
      two_args(n.c_str(), args, kwargs, 1);
      return fn(args[0]);
    });
  };
  unary("neg", [](const c10::IValue& a) -> c10::IValue {
    if (a.isTensor()) return FX_ATEN("neg").call({a}, {});
    if (a.isDouble()) return -a.toDouble();
    if (a.isInt() || a.isBool()) {
      int64_t x = as_int(a);
      if (x == std::numeric_limits<int64_t>::min()) throw Error("operator.neg: integer overflow");
      return -x;
    }
    throw Error("operator.neg: bad operand type for unary -: '" + python_type_name(a) + "'");
  });
  unary("pos", [](const c10::IValue& a) -> c10::IValue {
    if (a.isTensor()) return FX_ATEN("positive").call({a}, {});
    if (a.isDouble()) return a;
    if (a.isInt() || a.isBool()) return as_int(a);
    throw Error("operator.pos: bad operand type for unary +: '" + python_type_name(a) + "'");
  });
  unary("invert", [](const c10::IValue& a) -> c10::IValue {
    if (a.isTensor()) return FX_ATEN("bitwise_not").call({a}, {});
    if (a.isInt() || a.isBool()) return ~as_int(a);
    throw Error("operator.invert: bad operand type for unary ~: '" + python_type_name(a) + "'");
  });
  unary("inv", [](const c10::IValue& a) -> c10::IValue {
    if (a.isTensor()) return FX_ATEN("bitwise_not").call({a}, {});
    if (a.isInt() || a.isBool()) return ~as_int(a);
    throw Error("operator.inv: bad operand type for unary ~: '" + python_type_name(a) + "'");
  });
  unary("abs", [](const c10::IValue& a) -> c10::IValue {
    if (a.isTensor()) return FX_ATEN("abs").call({a}, {});
    if (a.isDouble()) return std::fabs(a.toDouble());
    if (a.isInt() || a.isBool()) {
      int64_t x = as_int(a);
      if (x == std::numeric_limits<int64_t>::min()) throw Error("operator.abs: integer overflow");
      return x < 0 ? -x : x;
    }
    throw Error("operator.abs: bad operand type for abs(): '" + python_type_name(a) + "'");
  });
  unary("not_", [](const c10::IValue& a) -> c10::IValue { return !truth("operator.not_", a); });
  unary("truth", [](const c10::IValue& a) -> c10::IValue { return truth("operator.truth", a); });
  unary("index", [](const c10::IValue& a) -> c10::IValue {
    if (a.isInt() || a.isBool()) return as_int(a);
    if (a.isTensor() && a.toTensor().numel() == 1 && !a.toTensor().is_floating_point())
      return a.toTensor().item().toLong();
    throw Error("operator.index: '" + python_type_name(a) + "' object cannot be interpreted as an integer");
  });

  ad.function("operator.contains", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    two_args("contains", args, kwargs);
    const c10::IValue& a = args[0];
    const c10::IValue& b = args[1];
    if (a.isTensor()) {  // Tensor.__contains__: (element == self).any().item()
      if (!b.isTensor() && !is_number(b))
        throw Error(
            "operator.contains: Tensor.__contains__ only supports Tensor or scalar, but you passed in a " +
            python_type_name(b));
      c10::IValue eq = tensor_binop(kOps[13], a, b);
      return eq.toTensor().any().item().toBool();
    }
    if (is_sequence(a)) {
      for (const auto& e : sequence_items(a))
        if (py_equal(e, b)) return true;
      return false;
    }
    if (a.isGenericDict()) {
      for (const auto& kv : a.toGenericDict())
        if (py_equal(kv.key(), b)) return true;
      return false;
    }
    if (a.isString() && b.isString()) return a.toStringRef().find(b.toStringRef()) != std::string::npos;
    throw Error("operator.contains: argument of type '" + python_type_name(a) + "' is not iterable");
  });
  ad.function("operator.is_", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    two_args("is_", args, kwargs);
    if (args[0].isNone() || args[1].isNone()) return args[0].isNone() && args[1].isNone();
    return args[0].isSameIdentity(args[1]);
  });
  ad.function("operator.is_not", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    two_args("is_not", args, kwargs);
    if (args[0].isNone() || args[1].isNone()) return !(args[0].isNone() && args[1].isNone());
    return !args[0].isSameIdentity(args[1]);
  });
}

}  // namespace fx::runtime
