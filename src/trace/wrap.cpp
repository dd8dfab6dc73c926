#include <fx/node.h>
#include <fx/runtime.h>
#include <fx/tracer.h>
#include <fx/wrap.h>

namespace fx {

namespace {
Tracer* tracer_of(const std::vector<Value>& args, const ValueKwargs& kwargs) {
  auto find = [](const Value& v, auto& self) -> Tracer* {
    if (v.is_proxy()) return v.tracer();
    if (v.is_sequence() && v.has_proxy())
      for (const auto& item : v.items())
        if (Tracer* t = self(item, self)) return t;
    return nullptr;
  };
  for (const auto& a : args)
    if (Tracer* t = find(a, find)) return t;
  for (const auto& kv : kwargs)
    if (Tracer* t = find(kv.second, find)) return t;
  return nullptr;
}
}  // namespace

Value Wrapped::call(std::vector<Value> args, ValueKwargs kwargs) const {
  if (Tracer* t = tracer_of(args, kwargs)) {
    Value proxy = t->create_proxy(Op::call_function, name_, args, kwargs);
    proxy.node()->meta().set("is_wrapped", true);
    return proxy;
  }
  return fn_(args, kwargs);
}

Wrapped wrap(const Target& qualified_name, WrappedFunction fn) {
  if (qualified_name.str().empty()) throw Error("fx::wrap: the function needs a qualified name");
  if (!fn) throw Error("fx::wrap: the function for " + qualified_name.str() + " is null");
  register_function(qualified_name, make_callable("wrapped C++ function " + qualified_name.str(),
                                                  [fn](std::vector<c10::IValue>& args, IValueKwargs& kwargs) {
                                                    std::vector<Value> vargs(args.begin(), args.end());
                                                    ValueKwargs vkwargs;
                                                    for (auto& [k, v] : kwargs)
                                                      vkwargs.emplace_back(k, Value(v));
                                                    return fn(vargs, vkwargs).ivalue();
                                                  }));
  return Wrapped(qualified_name, std::move(fn));
}

}  // namespace fx
