// torch.* functions that are Python code in torch (2.14), not ATen operators,
// or whose Python signature differs from the ATen schema: torch.split,
// torch.einsum / meshgrid / broadcast_tensors (varargs), torch.tensor,
// torch.norm and Tensor.norm (p='fro' by default), torch.is_tensor,
// torch._assert, torch.fx's _assert_is_none.

#include "internal.h"

namespace fx::runtime {

namespace {

// f(*tensors) or f([tensors]): the tensors.
std::vector<at::Tensor> tensors_of(const std::string& fn, const std::vector<c10::IValue>& args, size_t from) {
  std::vector<c10::IValue> items(args.begin() + static_cast<std::ptrdiff_t>(from), args.end());
  if (items.size() == 1 && is_sequence(items[0])) items = sequence_items(items[0]);
  std::vector<at::Tensor> out;
  for (const auto& v : items) out.push_back(to_tensor(fn, v));
  return out;
}

// torch.tensor(data): infer the dtype as Python does (bool < int64 < default float).
void flatten_data(const std::string& fn, const c10::IValue& v, std::vector<int64_t>& shape, size_t depth,
                  std::vector<c10::IValue>& flat) {
  if (is_sequence(v)) {
    auto items = sequence_items(v);
    if (shape.size() <= depth)
      shape.resize(depth + 1, static_cast<int64_t>(items.size()));
    else if (shape[depth] != static_cast<int64_t>(items.size()))
      throw Error(fn + ": ValueError: expected sequence of length " + std::to_string(shape[depth]) +
                  " at dim " + std::to_string(depth) + " (got " + std::to_string(items.size()) + ")");
    for (const auto& e : items) flatten_data(fn, e, shape, depth + 1, flat);
    return;
  }
  if (!is_number(v))
    throw Error(fn + ": could not convert a " + python_type_name(v) + " to a tensor element");
  flat.push_back(v);
}

// torch.norm(input, p, dim, keepdim, out, dtype), as torch/functional.py
// computes it for a strided tensor: 'fro' over at most two dims (or all) is
// the 2-norm of linalg.vector_norm, another string goes to
// linalg.matrix_norm, a number (None meaning 2) to linalg.vector_norm.
c10::IValue norm(const std::string& fn, const std::vector<c10::IValue>& a) {
  const at::Tensor input = to_tensor(fn, a[0]);
  const c10::IValue &p = a[1], &dim = a[2];
  const bool keepdim = to_bool(fn, a[3]);
  const c10::IValue& out = a[4];
  const auto dtype = opt_dtype(fn, a[5]);
  if (input.layout() != at::kStrided)
    throw Error(fn + ": only strided tensors are supported (this one is " + c10::str(input.layout()) + ")");
  c10::optional<std::vector<int64_t>> dims;
  if (!dim.isNone()) dims = dim.isInt() ? std::vector<int64_t>{dim.toInt()} : to_int_list(fn, dim);
  auto vector_norm = [&](const at::Scalar& ord) {
    const at::OptionalIntArrayRef d = dims ? at::OptionalIntArrayRef(*dims) : c10::nullopt;
    if (out.isNone()) return at::linalg_vector_norm(input, ord, d, keepdim, dtype);
    at::Tensor o = to_tensor(fn, out);
    return at::linalg_vector_norm_out(o, input, ord, d, keepdim, dtype);
  };
  if (p.isString()) {
    const std::string& ord = p.toStringRef();
    if (ord == "fro" && (!dims || dim.isInt() || dims->size() <= 2)) return vector_norm(2);
    std::vector<int64_t> d = dims ? *dims : std::vector<int64_t>{};
    if (!dims)
      for (int64_t i = 0; i < input.dim(); ++i) d.push_back(i);
    if (out.isNone()) return at::linalg_matrix_norm(input, ord, d, keepdim, dtype);
    at::Tensor o = to_tensor(fn, out);
    return at::linalg_matrix_norm_out(o, input, ord, d, keepdim, dtype);
  }
  return vector_norm(p.isNone() ? at::Scalar(2.0) : to_scalar(fn, p));
}

}  // namespace

void register_torch_functions(Adapters& ad) {
  // torch.functional.split(tensor, split_size_or_sections, dim=0) -> tensor.split(...)
  for (const char* name : {"torch.split", "torch.functional.split"}) {
    ad.function(
        name,
        [params = python_params(name)](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
          auto a = runtime::bind("torch.split", params, args, kwargs);
          at::Tensor t = to_tensor("torch.split", a[0]);
          int64_t dim = to_int("torch.split", a[2]);
          auto parts = a[1].isInt() ? t.split(a[1].toInt(), dim)
                                    : t.split_with_sizes(to_int_list("torch.split", a[1]), dim);
          return c10::ivalue::Tuple::create(std::vector<c10::IValue>(parts.begin(), parts.end()));
        });
  }
  for (const char* name : {"torch.einsum", "torch.functional.einsum"}) {
    ad.function(name, [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      if (!kwargs.empty()) throw Error("torch.einsum: keyword arguments are not supported");
      if (args.empty())
        throw Error("torch.einsum(): must specify the equation string and at least one operand");
      return at::einsum(to_str("torch.einsum", args[0]), tensors_of("torch.einsum", args, 1));
    });
  }
  for (const char* name : {"torch.meshgrid", "torch.functional.meshgrid"}) {
    ad.function(name, [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      std::string indexing = "ij";
      for (const auto& [k, v] : kwargs) {
        if (k != "indexing") throw Error("torch.meshgrid: unexpected keyword argument '" + k + "'");
        if (!v.isNone()) indexing = to_str("torch.meshgrid", v);
      }
      auto r = at::meshgrid(tensors_of("torch.meshgrid", args, 0), indexing);
      return c10::ivalue::Tuple::create(std::vector<c10::IValue>(r.begin(), r.end()));
    });
  }
  for (const char* name : {"torch.broadcast_tensors", "torch.functional.broadcast_tensors"}) {
    ad.function(name, [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
      if (!kwargs.empty()) throw Error("torch.broadcast_tensors takes no keyword arguments");
      auto r = at::broadcast_tensors(tensors_of("torch.broadcast_tensors", args, 0));
      return c10::ivalue::Tuple::create(std::vector<c10::IValue>(r.begin(), r.end()));
    });
  }
  for (const char* name : {"torch.norm", "torch.functional.norm"}) {
    ad.function(name,
                [name, params = python_params(name)](std::vector<c10::IValue>& args, IValueKwargs& kwargs)
                    -> c10::IValue { return norm(name, runtime::bind(name, params, args, kwargs)); });
  }
  // Tensor.norm(p='fro', dim=None, keepdim=False, dtype=None): torch.norm.
  ad.method("norm", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("Tensor.norm",
                  {req("self"), opt("p", std::string("fro")), opt("dim", c10::IValue()),
                   opt("keepdim", false), opt("dtype", c10::IValue())},
                  args, kwargs);
    a.insert(a.begin() + 4, c10::IValue());  // out
    return norm("Tensor.norm", a);
  });
  // torch.unique(input, sorted=True, return_inverse=False, return_counts=False,
  // dim=None) and unique_consecutive(input, return_inverse, return_counts,
  // dim): the boolean dispatch in torch/functional.py returns the output
  // alone, or a tuple with the inverse indices and/or the counts asked for.
  auto unique_result = [](const std::tuple<at::Tensor, at::Tensor, at::Tensor>& r, bool inverse,
                          bool counts) -> c10::IValue {
    const auto& [output, inverse_indices, counts_of] = r;
    if (!inverse && !counts) return output;
    std::vector<c10::IValue> items{output};
    if (inverse) items.emplace_back(inverse_indices);
    if (counts) items.emplace_back(counts_of);
    return c10::ivalue::Tuple::create(std::move(items));
  };
  for (const char* name : {"torch.unique", "torch.functional.unique"}) {
    ad.function(name,
                [name, unique_result, params = python_params(name)](std::vector<c10::IValue>& args,
                                                                    IValueKwargs& kwargs) -> c10::IValue {
                  auto a = runtime::bind(name, params, args, kwargs);
                  const at::Tensor input = to_tensor(name, a[0]);
                  const bool sorted = to_bool(name, a[1]), inverse = to_bool(name, a[2]),
                             counts = to_bool(name, a[3]);
                  if (a[4].isNone())
                    return unique_result(at::_unique2(input, sorted, inverse, counts), inverse, counts);
                  return unique_result(at::unique_dim(input, to_int(name, a[4]), sorted, inverse, counts),
                                       inverse, counts);
                });
  }
  for (const char* name : {"torch.unique_consecutive", "torch.functional.unique_consecutive"}) {
    ad.function(name,
                [name, unique_result, params = python_params(name)](std::vector<c10::IValue>& args,
                                                                    IValueKwargs& kwargs) -> c10::IValue {
                  auto a = runtime::bind(name, params, args, kwargs);
                  const bool inverse = to_bool(name, a[1]), counts = to_bool(name, a[2]);
                  const auto dim =
                      a[3].isNone() ? std::optional<int64_t>() : std::optional(to_int(name, a[3]));
                  return unique_result(at::unique_consecutive(to_tensor(name, a[0]), inverse, counts, dim),
                                       inverse, counts);
                });
  }
  // torch.stft: torch/functional.py pads a centered signal, then calls
  // ATen's stft; ATen's stft.center overload does both, in the same way.
  for (const char* name : {"torch.stft", "torch.functional.stft"}) {
    ad.function(
        name,
        [name, params = python_params(name)](std::vector<c10::IValue>& args,
                                             IValueKwargs& kwargs) -> c10::IValue {
          auto a = runtime::bind(name, params, args, kwargs);
          auto optional_int = [&](const c10::IValue& v) {
            return v.isNone() ? std::optional<int64_t>() : std::optional(to_int(name, v));
          };
          auto optional_bool = [&](const c10::IValue& v) {
            return v.isNone() ? std::optional<bool>() : std::optional(to_bool(name, v));
          };
          const bool center = to_bool(name, a[5]);
          if (center && !a[10].isNone())
            throw Error(std::string(name) + ": stft align_to_window should only be set when center = false");
          const std::optional<at::Tensor> window =
              a[4].isNone() ? std::optional<at::Tensor>() : std::optional(to_tensor(name, a[4]));
          return at::stft(to_tensor(name, a[0]), to_int(name, a[1]), optional_int(a[2]), optional_int(a[3]),
                          window, center, to_str(name, a[6]), to_bool(name, a[7]), optional_bool(a[8]),
                          optional_bool(a[9]), optional_bool(a[10]));
        });
  }
  // torch.tensordot(a, b, dims=2, out=None): an int n contracts a's last n
  // dims with b's first n; a pair of lists names them.
  for (const char* name : {"torch.tensordot", "torch.functional.tensordot"}) {
    ad.function(
        name,
        [name, params = python_params(name)](std::vector<c10::IValue>& args,
                                             IValueKwargs& kwargs) -> c10::IValue {
          auto a = runtime::bind(name, params, args, kwargs);
          const at::Tensor x = to_tensor(name, a[0]), y = to_tensor(name, a[1]);
          std::vector<int64_t> dims_a, dims_b;
          if (a[2].isInt()) {
            const int64_t n = a[2].toInt();
            if (n < 0)
              throw Error(std::string(name) +
                          ": tensordot expects dims >= 0, but got dims=" + std::to_string(n));
            if (n > std::min(x.dim(), y.dim()))
              throw Error(std::string(name) +
                          ": tensordot expects dims < ndim_a or ndim_b, but got dims=" + std::to_string(n));
            for (int64_t i = -n; i < 0; ++i) dims_a.push_back(i);
            for (int64_t i = 0; i < n; ++i) dims_b.push_back(i);
          } else {
            auto pair = sequence_items(a[2]);
            if (!is_sequence(a[2]) || pair.size() != 2)
              throw Error(std::string(name) + ": dims must be an int or a pair of lists of dims");
            auto dims_of = [&](const c10::IValue& v) {
              return v.isInt() ? std::vector<int64_t>{v.toInt()} : to_int_list(name, v);
            };
            dims_a = dims_of(pair[0]);
            dims_b = dims_of(pair[1]);
          }
          if (a[3].isNone()) return at::tensordot(x, y, dims_a, dims_b);
          at::Tensor out = to_tensor(name, a[3]);
          return at::tensordot_out(out, x, y, dims_a, dims_b);
        });
  }
  ad.function("torch.tensor", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    const std::string fn = "torch.tensor";
    auto a = bind(fn,
                  {req("data"), kwo("dtype", c10::IValue()), kwo("device", c10::IValue()),
                   kwo("requires_grad", false), kwo("pin_memory", false)},
                  args, kwargs);
    if (a[0].isTensor()) return a[0].toTensor().clone().detach();
    std::vector<int64_t> shape;
    std::vector<c10::IValue> flat;
    flatten_data(fn, a[0], shape, 0, flat);
    c10::ScalarType inferred = at::kBool;
    for (const auto& v : flat) {
      if (v.isDouble())
        inferred = at::typeMetaToScalarType(at::get_default_dtype());
      else if (v.isInt() && inferred == at::kBool)
        inferred = at::kLong;
    }
    if (flat.empty()) inferred = at::typeMetaToScalarType(at::get_default_dtype());
    at::Tensor out = at::empty(shape, at::TensorOptions().dtype(inferred));
    auto flat_out = out.view({-1});
    for (size_t i = 0; i < flat.size(); ++i) flat_out[static_cast<int64_t>(i)].fill_(to_scalar(fn, flat[i]));
    if (!a[1].isNone()) out = out.to(to_dtype(fn, a[1]));
    if (!a[2].isNone()) out = out.to(a[2].isDevice() ? a[2].toDevice() : c10::Device(to_str(fn, a[2])));
    if (to_bool(fn, a[3])) out.set_requires_grad(true);
    return out;
  });
  ad.function("torch.numel", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("torch.numel", {req("input")}, args, kwargs);
    return to_tensor("torch.numel", a[0]).numel();
  });
  ad.function("torch.is_tensor", [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
    auto a = bind("torch.is_tensor", {req("obj")}, args, kwargs);
    return a[0].isTensor();
  });
  ad.function("torch._assert",
              [params = python_params("torch._assert")](std::vector<c10::IValue>& args,
                                                        IValueKwargs& kwargs) -> c10::IValue {
                auto a = runtime::bind("torch._assert", params, args, kwargs);
                if (!truth("torch._assert", a[0]))
                  throw Error("torch._assert: AssertionError: " +
                              (a[1].isString() ? a[1].toStringRef() : python_type_name(a[1])));
                return c10::IValue();
              });
  // What a graph traced with a concrete_args value of None asserts.
  ad.function("torch.fx._symbolic_trace._assert_is_none",
              [](std::vector<c10::IValue>& args, IValueKwargs& kwargs) -> c10::IValue {
                auto a = bind("_assert_is_none", {req("value"), req("msg")}, args, kwargs);
                if (!a[0].isNone())
                  throw Error("_assert_is_none: AssertionError: " +
                              (a[1].isString() ? a[1].toStringRef() : python_type_name(a[1])));
                return c10::IValue();
              });
}

}  // namespace fx::runtime
