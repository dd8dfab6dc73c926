// The C++ of a torch.nn.functional call, for export_cpp: one renderer per
// function, looked up by name in a table. Each binds the call by the
// parameters the runtime binds it by (fx/python_function.h's parameters_of:
// torch 2.14's signature of a Python function, a builtin's ATen schema).

#include <fx/python_function.h>

#include <string_view>
#include <unordered_map>

#include "cpp_emit.h"

namespace fx::codegen {

namespace {

// One F.* call being written: its node, the function's short name, and the
// helpers every renderer reads its arguments with.
struct Call {
  Emitter& e;
  const Node* n;
  const std::string& f;

  // The call bound to the parameters of F.<f>, as torch.fx binds a call
  // (fast_bind): each parameter's argument or default.
  std::vector<Argument> bind() const {
    const std::string name = "torch.nn.functional." + f;
    const std::vector<PythonParam>* params = parameters_of(name);
    if (!params) Emitter::fail(n, "calls " + name + ", whose signature torch 2.14 does not give");
    std::vector<int64_t> slots;
    std::string why;
    if (!fast_bind_call(*params, n->args().size(), n->kwargs(), slots, why))
      Emitter::fail(n, "calls " + name + " wrongly: " + why);
    std::vector<Argument> out;
    out.reserve(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const Argument* given = bound_argument(slots[i], n->args(), n->kwargs());
      out.push_back(given ? *given : (*params)[i].default_value);
    }
    return out;
  }
  std::string v(const Argument& a) const { return e.value(a).expr; }
  // An int list argument of `dims` items; an int stands for all of them.
  std::string list_of(const Argument& a, int dims) const {
    CppValue x = e.value(a);
    if (x.kind == Kind::integer)
      return cpp_int_list(std::vector<std::string>(static_cast<size_t>(dims), x.expr));
    return x.expr;
  }
  std::string opt_list(const Argument& a, int dims) const {
    return a.is_none() ? std::string("{}") : list_of(a, dims);
  }
  std::string opt(const Argument& a) const { return a.is_none() ? std::string("{}") : v(a); }
  // `name`, or its in-place form when the `inplace` argument is True.
  static std::string inplace(const Argument& a, const std::string& name) {
    return a.is<bool>() && a.get<bool>() ? name + "_" : name;
  }
  // The spatial dimensions a name ends in: max_pool2d -> 2.
  int dims() const { return f[f.size() - 2] - '0'; }
};

CppValue tensor(std::string expr) { return {std::move(expr), Kind::tensor, {}}; }

// f(input, inplace=False) -> at::f or at::f_.
CppValue unary_inplace(const Call& c) {
  auto a = c.bind();
  return tensor("at::" + Call::inplace(a[1], c.f) + "(" + c.v(a[0]) + ")");
}
CppValue unary(const Call& c) {
  auto a = c.bind();
  return tensor("at::" + c.f + "(" + c.v(a[0]) + ")");
}
CppValue relu6(const Call& c) {
  auto a = c.bind();
  return tensor("at::" + Call::inplace(a[1], "hardtanh") + "(" + c.v(a[0]) + ", 0.0, 6.0)");
}
CppValue gelu(const Call& c) {
  auto a = c.bind();
  return tensor("at::gelu(" + c.v(a[0]) + ", " + c.v(a[1]) + ")");
}
CppValue leaky_relu(const Call& c) {
  auto a = c.bind();
  return tensor("at::" + Call::inplace(a[2], "leaky_relu") + "(" + c.v(a[0]) + ", " + c.v(a[1]) + ")");
}
CppValue hardtanh(const Call& c) {
  auto a = c.bind();
  return tensor("at::" + Call::inplace(a[3], "hardtanh") + "(" + join({c.v(a[0]), c.v(a[1]), c.v(a[2])}) +
                ")");
}
CppValue softmax(const Call& c) {
  auto a = c.bind();
  if (a[1].is_none()) Emitter::fail(c.n, "leaves dim to PyTorch's legacy choice; give dim");
  return tensor("at::" + c.f + "(" + c.v(a[0]) + ", " + c.v(a[1]) + (a[3].is_none() ? "" : ", " + c.v(a[3])) +
                ")");
}
CppValue dropout(const Call& c) {
  auto a = c.bind();
  const std::string fn = c.f == "dropout" ? "dropout" : "feature_dropout";
  return tensor("at::" + Call::inplace(a[3], fn) + "(" + join({c.v(a[0]), c.v(a[1]), c.v(a[2])}) + ")");
}
CppValue linear(const Call& c) {
  auto a = c.bind();
  return tensor("at::linear(" + c.v(a[0]) + ", " + c.v(a[1]) + (a[2].is_none() ? "" : ", " + c.v(a[2])) +
                ")");
}
CppValue conv(const Call& c) {
  const int d = c.f[4] - '0';
  auto a = c.bind();
  if (a[4].is<std::string>())
    Emitter::fail(c.n, "pads by name ('same'/'valid'); give the padding as numbers");
  return tensor("at::" + c.f + "(" +
                join({c.v(a[0]), c.v(a[1]), c.opt(a[2]), c.list_of(a[3], d), c.list_of(a[4], d),
                      c.list_of(a[5], d), c.v(a[6])}) +
                ")");
}
CppValue batch_norm(const Call& c) {
  auto a = c.bind();
  return tensor("at::batch_norm(" +
                join({c.v(a[0]), c.opt(a[3]), c.opt(a[4]), c.opt(a[1]), c.opt(a[2]), c.v(a[5]), c.v(a[6]),
                      c.v(a[7]), "/*cudnn_enabled=*/true"}) +
                ")");
}
CppValue layer_norm(const Call& c) {
  auto a = c.bind();
  return tensor("at::layer_norm(" +
                join({c.v(a[0]), c.list_of(a[1], 1), c.opt(a[2]), c.opt(a[3]), c.v(a[4])}) + ")");
}
CppValue adaptive_avg_pool(const Call& c) {
  const int d = c.dims();
  auto a = c.bind();
  return tensor("at::" + c.f + "(" + c.v(a[0]) + ", " + c.list_of(a[1], d) + ")");
}
CppValue max_pool(const Call& c) {
  const int d = c.dims();
  auto a = c.bind();
  if (!(a[6].is<bool>() && !a[6].get<bool>()))
    Emitter::fail(c.n, "returns indices; export_cpp supports return_indices=False");
  return tensor("at::" + c.f + "(" +
                join({c.v(a[0]), c.list_of(a[1], d), c.opt_list(a[2], d), c.list_of(a[3], d),
                      c.list_of(a[4], d), c.v(a[5])}) +
                ")");
}
CppValue avg_pool2d(const Call& c) {
  auto a = c.bind();
  return tensor("at::avg_pool2d(" +
                join({c.v(a[0]), c.list_of(a[1], 2), c.opt_list(a[2], 2), c.list_of(a[3], 2), c.v(a[4]),
                      c.v(a[5]), c.v(a[6])}) +
                ")");
}
CppValue pad(const Call& c) {
  auto a = c.bind();
  return tensor("at::pad(" + join({c.v(a[0]), c.v(a[1]), c.v(a[2]), c.v(a[3])}) + ")");
}

using Renderer = CppValue (*)(const Call&);
const std::unordered_map<std::string_view, Renderer>& renderers() {
  static const std::unordered_map<std::string_view, Renderer> table = {
      {"relu", unary_inplace},
      {"silu", unary_inplace},
      {"hardswish", unary_inplace},
      {"hardsigmoid", unary_inplace},
      {"mish", unary_inplace},
      {"relu6", relu6},
      {"sigmoid", unary},
      {"tanh", unary},
      {"gelu", gelu},
      {"leaky_relu", leaky_relu},
      {"hardtanh", hardtanh},
      {"softmax", softmax},
      {"log_softmax", softmax},
      {"dropout", dropout},
      {"dropout2d", dropout},
      {"linear", linear},
      {"conv1d", conv},
      {"conv2d", conv},
      {"conv3d", conv},
      {"batch_norm", batch_norm},
      {"layer_norm", layer_norm},
      {"adaptive_avg_pool1d", adaptive_avg_pool},
      {"adaptive_avg_pool2d", adaptive_avg_pool},
      {"adaptive_avg_pool3d", adaptive_avg_pool},
      {"max_pool1d", max_pool},
      {"max_pool2d", max_pool},
      {"max_pool3d", max_pool},
      {"avg_pool2d", avg_pool2d},
      {"pad", pad},
  };
  return table;
}

}  // namespace

CppValue emit_functional(Emitter& e, const Node* n, const std::string& f) {
  auto it = renderers().find(f);
  if (it == renderers().end())
    Emitter::fail(n, "calls torch.nn.functional." + f + ", which export_cpp does not translate");
  return it->second(Call{e, n, f});
}

}  // namespace fx::codegen
