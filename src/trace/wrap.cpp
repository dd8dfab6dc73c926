#include <fx/node.h>
#include <fx/runtime.h>
#include <fx/tracer.h>
#include <fx/wrap.h>

#include "find_tracer.h"

namespace fx {

Value Wrapped::call(std::vector<Value> args, ValueKwargs kwargs) const {
  if (Tracer* t = detail::find_tracer(args, kwargs)) {
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
