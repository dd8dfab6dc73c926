// Value helpers, and adapters' arguments bound as torch.fx binds a Python
// function's (fast_bind, fx/python_function.h).

#include "internal.h"

#include <fx/python_function.h>

#include <ATen/ScalarOps.h>

#include <cmath>

namespace fx::runtime {

void type_error(const std::string& fn, const std::string& what) { throw Error(fn + ": " + what); }

bool is_number(const c10::IValue& v) { return v.isInt() || v.isDouble() || v.isBool(); }

double to_double(const std::string& fn, const c10::IValue& v) {
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  type_error(fn, "expected a float, got " + python_type_name(v));
}

int64_t to_int(const std::string& fn, const c10::IValue& v) {
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool() ? 1 : 0;
  if (v.isSymInt()) return v.toSymInt().expect_int();
  type_error(fn, "expected an int, got " + python_type_name(v));
}

c10::ScalarType to_dtype(const std::string& fn, const c10::IValue& v) {
  if (auto d = dtype_of(v)) return *d;
  type_error(fn, "expected a torch.dtype, got " + python_type_name(v));
}

bool to_bool(const std::string& fn, const c10::IValue& v) {
  if (v.isBool()) return v.toBool();
  type_error(fn, "expected a bool, got " + python_type_name(v));
}

at::Tensor to_tensor(const std::string& fn, const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor();
  type_error(fn, "expected a Tensor, got " + python_type_name(v));
}

c10::optional<at::Tensor> to_opt_tensor(const std::string& fn, const c10::IValue& v) {
  if (v.isNone()) return c10::nullopt;
  return to_tensor(fn, v);
}

std::string to_str(const std::string& fn, const c10::IValue& v) {
  if (v.isString()) return v.toStringRef();
  type_error(fn, "expected a str, got " + python_type_name(v));
}

bool is_sequence(const c10::IValue& v) { return v.isTuple() || v.isList(); }

std::vector<c10::IValue> sequence_items(const c10::IValue& v) {
  if (v.isTuple()) {
    const auto& e = v.toTupleRef().elements();
    return std::vector<c10::IValue>(e.begin(), e.end());
  }
  if (v.isList()) return v.toListRef().vec();
  return {};
}

std::vector<int64_t> to_int_list(const std::string& fn, const c10::IValue& v, size_t n) {
  if (v.isInt()) {
    if (n == 0) type_error(fn, "expected a sequence of ints, got int");
    return std::vector<int64_t>(n, v.toInt());
  }
  if (v.isIntList()) return v.toIntVector();
  if (is_sequence(v)) {
    std::vector<int64_t> out;
    for (const auto& e : sequence_items(v)) {
      if (!e.isInt())
        type_error(fn, "expected a sequence of ints, got an element of type " + python_type_name(e));
      out.push_back(e.toInt());
    }
    return out;
  }
  type_error(fn, "expected an int or a sequence of ints, got " + python_type_name(v));
}

at::Scalar to_scalar(const std::string& fn, const c10::IValue& v) {
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isBool()) return v.toBool();
  if (v.isComplexDouble()) return v.toComplexDouble();
  type_error(fn, "expected a number, got " + python_type_name(v));
}

at::Tensor wrapped_scalar(const c10::IValue& v) {
  // Made as C++'s `x + 1` makes it, without an operator call, so that
  // fx::capture records the number (add.Tensor(x, 1)), as make_fx does, and
  // not a scalar_tensor node before the call.
  at::Tensor t = at::scalar_to_tensor(v.isBool()            ? c10::Scalar(v.toBool())
                                      : v.isInt()           ? c10::Scalar(v.toInt())
                                      : v.isComplexDouble() ? c10::Scalar(v.toComplexDouble())
                                                            : c10::Scalar(v.toDouble()));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

bool truth(const std::string& fn, const c10::IValue& v) {
  if (v.isNone()) return false;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  if (v.isDouble()) return v.toDouble() != 0.0;
  if (v.isString()) return !v.toStringRef().empty();
  if (v.isTuple()) return !v.toTupleRef().elements().empty();
  if (v.isList()) return !v.toListRef().empty();
  if (v.isGenericDict()) return !v.toGenericDict().empty();
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1)
      type_error(fn, "Boolean value of Tensor with " +
                         std::string(t.numel() == 0 ? "no values" : "more than one value") + " is ambiguous");
    return t.item().toBool();
  }
  return true;
}

std::vector<Param> python_params(std::string_view qualified_name) {
  const std::vector<PythonParam>* params = parameters_of(qualified_name);
  if (!params) throw Error(std::string(qualified_name) + ": torch 2.14 gives no signature fxcpp can bind by");
  std::vector<Param> out;
  out.reserve(params->size());
  for (const PythonParam& p : *params)
    out.push_back(
        Param{p.name, p.has_default ? std::optional(to_ivalue(p.default_value)) : std::nullopt, p.kwonly});
  return out;
}

std::vector<c10::IValue> bind(const std::string& fn, const std::vector<Param>& params,
                              std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
  std::vector<int64_t> slots;
  std::string why;
  if (!fast_bind_call(params, args.size(), kwargs, slots, why)) type_error(fn, "TypeError: " + why);
  std::vector<c10::IValue> out;
  out.reserve(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    // Apart: a conditional of an rvalue and a const lvalue copies both.
    if (c10::IValue* given = bound_argument(slots[p], args, kwargs))
      out.push_back(std::move(*given));
    else
      out.push_back(*params[p].default_value);
  }
  return out;
}

}  // namespace fx::runtime
