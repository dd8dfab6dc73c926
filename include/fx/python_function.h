#pragma once
// torch 2.14's Python functions (torch.nn.functional, torch.functional and
// the Python ones of torch: F.softmax, F.interpolate, torch.norm,
// torch.split, ...): one table, generated from the running torch by
// scripts/gen_python_functions.py, that says for each
// - its signature, as inspect.signature gives it (what NormalizeArgs binds);
// - the call torch.fx records when a Proxy reaches it: the target and the
//   arguments its handle_torch_function call passes on. F.softmax(x, dim=-1)
//   is recorded as softmax(x, dim = -1, _stacklevel = 3, dtype = None);
//   F.upsample as F.interpolate. The tracer records the same (fx::call).
// Builtins (torch.relu, F.linear, F.conv2d, torch.ops.*) are not in it:
// torch.fx records them as they are called.

#include <fx/argument.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

struct PythonParam {
  const char* name;
  bool kwonly;
  bool has_default;
  Argument default_value;
  bool positional_only = false;  // none of these functions has one
};

struct PythonFunction {
  // One argument of the recorded call: a parameter's value or a constant,
  // positional (keyword == nullptr) or by keyword.
  struct Item {
    const char* keyword;
    int param;         // index into params, or -1 for `literal`
    Argument literal;  // what the function passes itself (upsample's antialias=False)
  };
  struct Form {
    const char* target;  // as torch.fx names it (torch.norm is torch.functional.norm)
    std::vector<Item> items;
    // A call_method of the first item: the function returns what one method
    // of its input returns (F.sigmoid is `return input.sigmoid()`).
    bool method = false;
    // Parameters whose truth the function takes before it records (torch.unique
    // dispatches again on return_counts): a symbolic value there is a TraceError.
    std::vector<int> truth_tested = {};
  };

  const char* name;
  bool supported;  // false: *args, or a default fxcpp cannot hold; nothing below is known
  std::vector<PythonParam> params;
  std::optional<Form> form;  // nullopt: torch.fx records the call as written (or not at all)
  // A boolean dispatch (max_pool2d's return_indices): the parameter that
  // chooses, and the form when it is true (`form` is the one when false).
  int dispatch_param = -1;
  std::optional<Form> form_if_true;
};

// The function's entry, or nullptr when `qualified_name` is not a Python
// function of torch. O(1).
const PythonFunction* python_function(std::string_view qualified_name);
// Every entry, in the table's order.
const std::vector<PythonFunction>& python_functions();

// The builtins of torch.nn.functional that fxcpp binds by name (F.linear,
// F.conv2d, F.gelu, F.avg_pool2d, F.logsigmoid, ...): C functions, of which
// Python gives no signature. Their parameters are those torch.fx reads from
// their ATen schemas (get_signature_for_torch_op), with the defaults as fxcpp
// holds them: an int for a list of equal items, and None for a pooling's
// stride ("as kernel_size", which F.avg_pool2d also takes None for). nullptr
// for any other name. O(1).
const std::vector<PythonParam>* builtin_params(std::string_view qualified_name);
// What a call of `qualified_name` binds by: a Python function's parameters
// from the table, or a builtin's; nullptr for neither, or for a function
// whose signature the table cannot hold (*args).
const std::vector<PythonParam>* parameters_of(std::string_view qualified_name);

namespace detail {
// What fast_bind reads of a parameter, for records that leave some of it out.
template <class P>
bool kwonly(const P& p) {
  if constexpr (requires { p.kwonly; })
    return p.kwonly;
  else
    return false;
}
template <class P>
bool positional_only(const P& p) {
  if constexpr (requires { p.positional_only; })
    return p.positional_only;
  else
    return false;
}
template <class P>
bool has_default(const P& p) {
  if constexpr (requires { p.has_default; })
    return p.has_default;
  else
    return p.default_value.has_value();
}
}  // namespace detail

// torch.utils._inspect._fast_bind (torch.fx 2.x binds with it, not with
// inspect.Signature.bind): for each parameter, the positional index it takes
// (< nargs), nargs + the index of the keyword it takes, or -1 (its default).
// Returns false, with _fast_bind's reason in `why`, where it raises
// TypeError; its checks run in its order (parameters first, unknown
// keywords last), so a call wrong in two ways gets the same message.
// `Params` is a sequence of parameters with a name; kwonly, positional_only
// and has_default where they have them (a parameter without has_default has
// one when its optional default_value holds one): the table's, normalize_args'
// schemas', the runtime's (fx/runtime_args.h) and the C++ emitter's all bind
// with it.
template <class Params>
bool fast_bind(const Params& params, size_t nargs, const std::vector<std::string_view>& keywords,
               std::vector<int64_t>& slots, std::string& why) {
  slots.assign(params.size(), -1);
  size_t max_positional = 0;
  for (const auto& p : params) max_positional += !detail::kwonly(p);
  if (nargs > max_positional) {
    why = "Too many positional arguments: expected max " + std::to_string(max_positional) + ", got " +
          std::to_string(nargs);
    return false;
  }
  auto keyword = [&](std::string_view name) -> int64_t {
    for (size_t k = 0; k < keywords.size(); ++k)
      if (keywords[k] == name) return static_cast<int64_t>(k);
    return -1;
  };
  size_t i = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    const auto& param = params[p];
    const std::string_view name = param.name;
    const int64_t k = keyword(name);
    if (detail::positional_only(param) && k >= 0) {
      why = "Got some positional-only arguments passed as keyword arguments: '" + std::string(name) + "'";
      return false;
    }
    if (!detail::kwonly(param) && i < nargs) {
      if (k >= 0) {
        why = "Multiple values for argument '" + std::string(name) + "'";
        return false;
      }
      slots[p] = static_cast<int64_t>(i++);
    } else if (k >= 0) {
      slots[p] = static_cast<int64_t>(nargs) + k;
    } else if (!detail::has_default(param)) {
      why = "Missing required argument '" + std::string(name) + "'";
      return false;
    }
  }
  for (std::string_view name : keywords) {
    bool known = false;
    for (const auto& param : params) known = known || std::string_view(param.name) == name;
    if (!known) {
      why = "Got an unexpected keyword argument '" + std::string(name) + "'";
      return false;
    }
  }
  return true;
}

// fast_bind of a call whose keyword arguments are `kwargs`, a sequence of
// (keyword, value) pairs.
template <class Params, class Kwargs>
bool fast_bind_call(const Params& params, size_t nargs, const Kwargs& kwargs, std::vector<int64_t>& slots,
                    std::string& why) {
  std::vector<std::string_view> keywords;
  keywords.reserve(kwargs.size());
  for (const auto& kv : kwargs) keywords.emplace_back(kv.first);
  return fast_bind(params, nargs, keywords, slots, why);
}

// The argument that fast_bind's `slot` names in a call of args and kwargs (a
// sequence of (keyword, value) pairs): a positional one, a keyword's value,
// or nullptr for a parameter left to its default (slot < 0).
template <class Args, class Kwargs>
auto bound_argument(int64_t slot, Args& args, Kwargs& kwargs) -> decltype(&args[0]) {
  if (slot < 0) return nullptr;
  const auto s = static_cast<size_t>(slot);
  if (s < args.size()) return &args[s];
  return &kwargs[s - args.size()].second;
}

}  // namespace fx
