// fx::Value: concrete values run on LibTorch, symbolic ones are recorded.
#include <fx/node.h>
#include <fx/python_function.h>
#include <fx/runtime.h>
#include <fx/tracer.h>
#include <fx/value.h>

#include "find_tracer.h"

#include <algorithm>

namespace fx {

namespace {

[[noreturn]] void control_flow_error(const Value& v, std::string_view what) {
  throw TraceError(
      "symbolically traced variables cannot be used as inputs to control flow: " + std::string(what) +
      " needs the value of node '" + v.node()->name() +
      "', which is unknown while tracing. Pass the input it depends on as a concrete value, or move "
      "the code into a function recorded as one node (fx::wrap) or into a leaf module");
}

// The first symbolic value inside `v` (which has one).
Value first_proxy(const Value& v) {
  if (v.is_proxy()) return v;
  for (const auto& item : v.items())
    if (item.has_proxy()) return first_proxy(item);
  return v;
}

std::vector<c10::IValue> runtime_args(const std::vector<Value>& args) {
  std::vector<c10::IValue> out;
  out.reserve(args.size());
  for (const auto& a : args) out.push_back(a.ivalue());
  return out;
}

IValueKwargs runtime_kwargs(const ValueKwargs& kwargs) {
  IValueKwargs out;
  out.reserve(kwargs.size());
  for (const auto& [k, v] : kwargs) out.emplace_back(k, v.ivalue());
  return out;
}

}  // namespace

Tracer* detail::find_tracer(const Value& v) {
  if (v.is_proxy()) return v.tracer();
  if (v.is_sequence() && v.has_proxy())
    for (const auto& item : v.items())
      if (Tracer* t = find_tracer(item)) return t;
  return nullptr;
}

Tracer* detail::find_tracer(const std::vector<Value>& args, const ValueKwargs& kwargs) {
  for (const auto& a : args)
    if (Tracer* t = find_tracer(a)) return t;
  for (const auto& kv : kwargs)
    if (Tracer* t = find_tracer(kv.second)) return t;
  // No proxy: a parameter of the traced module is symbolic all the same.
  if (Tracer* t = Tracer::current()) {
    for (const auto& a : args)
      if (t->holds_parameter(a)) return t;
    for (const auto& kv : kwargs)
      if (t->holds_parameter(kv.second)) return t;
  }
  return nullptr;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.v_ = std::make_shared<const Seq>(Seq{SeqKind::list, std::move(items), {}});
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v;
  v.v_ = std::make_shared<const Seq>(Seq{SeqKind::tuple, std::move(items), {}});
  return v;
}

Value Value::slice(Value start, Value stop, Value step) {
  Value v;
  v.v_ = std::make_shared<const Seq>(
      Seq{SeqKind::slice, {std::move(start), std::move(stop), std::move(step)}, {}});
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  Seq seq{SeqKind::dict, {}, {}};
  seq.items.reserve(items.size());
  seq.keys.reserve(items.size());
  for (auto& [key, value] : items) {
    // A repeated key keeps its first position and takes the last value, as in Python.
    auto at = std::find(seq.keys.begin(), seq.keys.end(), key);
    if (at != seq.keys.end()) {
      seq.items[static_cast<size_t>(at - seq.keys.begin())] = std::move(value);
      continue;
    }
    seq.keys.push_back(std::move(key));
    seq.items.push_back(std::move(value));
  }
  Value v;
  v.v_ = std::make_shared<const Seq>(std::move(seq));
  return v;
}

Value Value::proxy(Node* node, Tracer* tracer) {
  Value v;
  v.v_ = Proxy{node, tracer};
  return v;
}

Node* Value::node() const { return is_proxy() ? std::get<Proxy>(v_).node : nullptr; }
Tracer* Value::tracer() const { return is_proxy() ? std::get<Proxy>(v_).tracer : nullptr; }

bool Value::has_proxy() const {
  if (is_proxy()) return true;
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_))
    for (const auto& item : (*seq)->items)
      if (item.has_proxy()) return true;
  return false;
}

bool Value::is_none() const {
  const auto* iv = std::get_if<c10::IValue>(&v_);
  return iv && iv->isNone();
}

c10::IValue Value::ivalue() const {
  if (is_proxy()) control_flow_error(*this, "reading the concrete value");
  if (const auto* iv = std::get_if<c10::IValue>(&v_)) return *iv;
  if (const auto* a = std::get_if<Argument>(&v_)) return to_ivalue(*a);
  const Seq& seq = *std::get<std::shared_ptr<const Seq>>(v_);
  std::vector<c10::IValue> items;
  items.reserve(seq.items.size());
  for (const auto& item : seq.items) items.push_back(item.ivalue());
  switch (seq.kind) {
    case SeqKind::tuple:
      return c10::ivalue::Tuple::create(std::move(items));
    case SeqKind::slice:
      return slice_ivalue(items[0], items[1], items[2]);
    case SeqKind::dict: {
      c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < items.size(); ++i) d.insert(seq.keys[i], std::move(items[i]));
      return d;
    }
    case SeqKind::list:
      break;
  }
  return list_ivalue(std::move(items));
}

at::Tensor Value::tensor() const {
  c10::IValue v = ivalue();
  if (!v.isTensor()) throw Error("expected a Tensor, got a " + python_type_name(v));
  return v.toTensor();
}

bool Value::is_list() const {
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_)) return (*seq)->kind == SeqKind::list;
  const auto* iv = std::get_if<c10::IValue>(&v_);
  return iv && iv->isList();
}

bool Value::is_tuple() const {
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_)) return (*seq)->kind == SeqKind::tuple;
  const auto* iv = std::get_if<c10::IValue>(&v_);
  return iv && iv->isTuple();
}

bool Value::is_dict() const {
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_)) return (*seq)->kind == SeqKind::dict;
  const auto* iv = std::get_if<c10::IValue>(&v_);
  return iv && iv->isGenericDict();
}

std::vector<std::string> Value::keys() const {
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_); seq && (*seq)->kind == SeqKind::dict)
    return (*seq)->keys;
  const auto* iv = std::get_if<c10::IValue>(&v_);
  if (!iv || !iv->isGenericDict())
    throw Error(is_proxy() ? "node '" + node()->name() + "' is symbolic: its keys are unknown while tracing"
                           : "keys(): a " + python_type_name(ivalue()) + " is not a dict");
  std::vector<std::string> out;
  for (const auto& kv : iv->toGenericDict()) {
    if (!kv.key().isString()) throw Error("keys(): the dict has a " + python_type_name(kv.key()) + " key");
    out.push_back(kv.key().toStringRef());
  }
  return out;
}

std::vector<Value> Value::items() const {
  if (is_proxy())
    throw TraceError("node '" + node()->name() +
                     "' is symbolic and cannot be iterated: its length is unknown while tracing. Use "
                     "unpack(n) when the number of elements is known");
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_)) return (*seq)->items;
  c10::IValue v = ivalue();
  std::vector<Value> out;
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) out.emplace_back(e);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) out.emplace_back(e);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) out.emplace_back(kv.value());
  } else {
    throw Error("a " + python_type_name(v) + " value is not iterable");
  }
  return out;
}

std::vector<Value> Value::unpack(size_t n) const {
  if (!is_proxy()) {
    std::vector<Value> out = items();
    if (out.size() != n)
      throw Error("cannot unpack " + std::to_string(out.size()) + " values into " + std::to_string(n));
    return out;
  }
  std::vector<Value> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back((*this)[static_cast<int64_t>(i)]);
  return out;
}

Value::operator bool() const {
  if (has_proxy()) control_flow_error(first_proxy(*this), "converting to bool");
  c10::IValue v = ivalue();
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  if (v.isDouble()) return v.toDouble() != 0.0;
  if (v.isNone()) return false;
  if (v.isString()) return !v.toStringRef().empty();
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1) throw Error("Boolean value of Tensor with more than one value is ambiguous");
    return t.item().toBool();
  }
  if (v.isList()) return !v.toListRef().empty();
  if (v.isTuple()) return !v.toTupleRef().elements().empty();
  return true;
}

int64_t Value::to_int() const {
  if (is_proxy()) control_flow_error(*this, "converting to int");
  c10::IValue v = ivalue();
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool() ? 1 : 0;
  if (v.isDouble()) return static_cast<int64_t>(v.toDouble());
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item().toLong();
  throw Error("cannot convert a " + python_type_name(v) + " to int");
}

double Value::to_double() const {
  if (is_proxy()) control_flow_error(*this, "converting to float");
  c10::IValue v = ivalue();
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item().toDouble();
  throw Error("cannot convert a " + python_type_name(v) + " to float");
}

Value Value::operator[](const Value& index) const {
  // A list/tuple built in C++ is a Python list/tuple: indexing it with an
  // int is plain Python, recorded nowhere, even when it holds proxies.
  if (const auto* seq = std::get_if<std::shared_ptr<const Seq>>(&v_);
      seq && (*seq)->kind != SeqKind::slice && !index.has_proxy()) {
    c10::IValue i = index.ivalue();
    if ((*seq)->kind == SeqKind::dict) {
      const auto& keys = (*seq)->keys;
      auto at = i.isString() ? std::find(keys.begin(), keys.end(), i.toStringRef()) : keys.end();
      if (at == keys.end())
        throw Error("KeyError: " + (i.isString() ? "'" + i.toStringRef() + "'" : python_type_name(i)) +
                    " is not a key of the dict");
      return (*seq)->items[static_cast<size_t>(at - keys.begin())];
    }
    if (i.isInt()) {
      auto n = static_cast<int64_t>((*seq)->items.size());
      int64_t k = i.toInt() < 0 ? i.toInt() + n : i.toInt();
      if (k < 0 || k >= n)
        throw Error("IndexError: index " + std::to_string(i.toInt()) + " is out of range for a " +
                    ((*seq)->kind == SeqKind::list ? "list" : "tuple") + " of " + std::to_string(n) +
                    " items");
      return (*seq)->items[static_cast<size_t>(k)];
    }
  }
  return call_function("operator.getitem", {*this, index});
}
Value Value::attr(std::string_view name) const {
  return call_function("builtins.getattr", {*this, Value(std::string(name))});
}

Value Value::call_method(std::string_view name, std::vector<Value> args, ValueKwargs kwargs) const {
  args.insert(args.begin(), *this);
  if (Tracer* t = detail::find_tracer(args, kwargs))
    return t->create_proxy(Op::call_method, Target(name), args, kwargs);
  return Value(resolve_method(name)->call(runtime_args(args), runtime_kwargs(kwargs)));
}

namespace {

// A Python function of torch reached by a proxy (fx/python_function.h): the
// call torch.fx records, its handle_torch_function arguments, every
// parameter after the first ones by keyword with its default filled in.
Value record_python_function(Tracer& tracer, const PythonFunction& f, const Target& target,
                             const std::vector<Value>& args, const ValueKwargs& kwargs) {
  std::vector<int64_t> slots;
  std::string why;
  if (!fast_bind_call(f.params, args.size(), kwargs, slots, why))
    throw TraceError(std::string(f.name) + "(): TypeError: " + why);
  auto value_of = [&](size_t p) -> Value {
    const Value* given = bound_argument(slots[p], args, kwargs);
    return given ? *given : Value(to_ivalue(f.params[p].default_value));
  };
  const PythonFunction::Form* form = &*f.form;
  if (f.dispatch_param >= 0 && static_cast<bool>(value_of(static_cast<size_t>(f.dispatch_param)))) {
    if (!f.form_if_true) return tracer.create_proxy(Op::call_function, target, args, kwargs);
    form = &*f.form_if_true;
  }
  // Python takes these parameters' truth on the way (bool() of a Proxy is a
  // TraceError there); only their concrete values get past.
  for (int p : form->truth_tested) static_cast<void>(static_cast<bool>(value_of(static_cast<size_t>(p))));
  std::vector<Value> recorded_args;
  ValueKwargs recorded_kwargs;
  for (const auto& item : form->items) {
    Value v = item.param >= 0 ? value_of(static_cast<size_t>(item.param)) : Value(to_ivalue(item.literal));
    if (item.keyword)
      recorded_kwargs.emplace_back(item.keyword, std::move(v));
    else
      recorded_args.push_back(std::move(v));
  }
  return tracer.create_proxy(form->method ? Op::call_method : Op::call_function, Target(form->target),
                             recorded_args, recorded_kwargs);
}

}  // namespace

Value call_function(const Target& target, std::vector<Value> args, ValueKwargs kwargs) {
  if (Tracer* t = detail::find_tracer(args, kwargs)) {
    const PythonFunction* f = python_function(target.str());
    if (f && f->form) return record_python_function(*t, *f, target, args, kwargs);
    return t->create_proxy(Op::call_function, target, args, kwargs);
  }
  return Value(resolve_function(target)->call(runtime_args(args), runtime_kwargs(kwargs)));
}

Value operator+(const Value& a, const Value& b) { return call_function("operator.add", {a, b}); }
Value& operator+=(Value& a, const Value& b) {
  // Symbolic, or a parameter of a traced module: `a = a + b`, as Python
  // runs `+=` on a Proxy (which has no __iadd__).
  Tracer* tracing = Tracer::current();
  if (a.has_proxy() || b.has_proxy() || !a.ivalue().isTensor() ||
      (tracing && (tracing->holds_parameter(a) || tracing->holds_parameter(b))))
    return a = a + b;
  c10::IValue other = b.ivalue();
  at::Tensor t = a.ivalue().toTensor();
  if (other.isTensor())
    t.add_(other.toTensor());
  else if (other.isInt() || other.isDouble() || other.isBool())
    t.add_(other.toScalar());
  else
    return a = a + b;
  return a;
}
Value operator-(const Value& a, const Value& b) { return call_function("operator.sub", {a, b}); }
Value operator*(const Value& a, const Value& b) { return call_function("operator.mul", {a, b}); }
Value operator/(const Value& a, const Value& b) { return call_function("operator.truediv", {a, b}); }
Value operator%(const Value& a, const Value& b) { return call_function("operator.mod", {a, b}); }
Value operator&(const Value& a, const Value& b) { return call_function("operator.and_", {a, b}); }
Value operator|(const Value& a, const Value& b) { return call_function("operator.or_", {a, b}); }
Value operator^(const Value& a, const Value& b) { return call_function("operator.xor", {a, b}); }
Value operator<<(const Value& a, const Value& b) { return call_function("operator.lshift", {a, b}); }
Value operator>>(const Value& a, const Value& b) { return call_function("operator.rshift", {a, b}); }
Value operator==(const Value& a, const Value& b) { return call_function("operator.eq", {a, b}); }
Value operator!=(const Value& a, const Value& b) { return call_function("operator.ne", {a, b}); }
Value operator<(const Value& a, const Value& b) { return call_function("operator.lt", {a, b}); }
Value operator<=(const Value& a, const Value& b) { return call_function("operator.le", {a, b}); }
Value operator>(const Value& a, const Value& b) { return call_function("operator.gt", {a, b}); }
Value operator>=(const Value& a, const Value& b) { return call_function("operator.ge", {a, b}); }
Value operator-(const Value& a) { return call_function("operator.neg", {a}); }
Value operator+(const Value& a) { return call_function("operator.pos", {a}); }
Value operator~(const Value& a) { return call_function("operator.invert", {a}); }
Value floordiv(const Value& a, const Value& b) { return call_function("operator.floordiv", {a, b}); }
Value pow(const Value& a, const Value& b) { return call_function("operator.pow", {a, b}); }
Value matmul_op(const Value& a, const Value& b) { return call_function("operator.matmul", {a, b}); }

}  // namespace fx
