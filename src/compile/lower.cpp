// Phase 2 of fx::compile: a float32 or float64 pointwise ATen node as an
// expression over at::vec::Vectorized<S> (V), S being the type it computes
// in: the loop-level form the code generator composes. Each value is a
// function of the loop index; an expression names its tensor operands {0},
// {1}, ... and the generator substitutes the values it loaded or computed
// for them. A bool value (a comparison, a mask read from a bool tensor) is
// a mask: a V whose lanes are all ones or all zeros, as at::vec's
// comparisons make them and V::blendv reads them; `where` and `masked_fill`
// select with it. bfloat16 and float16 nodes compute in float (S), their
// operands converted when loaded. Anything not in the tables below, of
// another type, or mixing types (which ATen would promote), stays an ATen
// call.
#include "phases.h"

#include <fx/error.h>
#include <fx/operator_overloads.h>

#include <ATen/ops/empty_strided.h>
#include <c10/util/strides.h>

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace fx::compile_detail {

std::optional<double> number(const Argument& a) {
  if (a.is<double>()) return a.get<double>();
  if (a.is<int64_t>()) return static_cast<double>(a.get<int64_t>());
  return std::nullopt;
}

bool is_view(const Node& node) {
  if (node.op() != Op::call_function) return false;
  const c10::OperatorHandle* op = node.target().operator_handle();
  return op && is_view_op(*op);
}

const passes::TensorMetadata* tensor_meta(const Node& node) {
  return node.meta().get<passes::TensorMetadata>("tensor_meta");
}

const char* element_type(c10::ScalarType t) {
  if (t == c10::kFloat) return "float";
  if (t == c10::kDouble) return "double";
  if (t == c10::kLong) return "int64_t";
  if (t == c10::kInt) return "int32_t";
  throw Error(std::string("fx::compile: no kernel computes in ") + c10::toString(t));
}

passes::TensorMetadata contiguous(passes::TensorMetadata m) {
  const c10::DimVector strides = c10::contiguous_strides(m.shape);
  m.stride.assign(strides.begin(), strides.end());
  m.memory_format = c10::MemoryFormat::Contiguous;
  return m;
}

passes::TensorMetadata with_strides(passes::TensorMetadata m, std::vector<int64_t> strides) {
  const passes::TensorMetadata laid_out = passes::extract_tensor_metadata(
      at::empty_strided(m.shape, strides, at::TensorOptions().dtype(m.dtype).device(at::kMeta)));
  m.stride = std::move(strides);
  m.memory_format = laid_out.memory_format;
  return m;
}

namespace {

// A number as a constant of the kernel's element type S (float or double),
// as ATen casts a Python scalar to the tensor's type: the double, exactly
// (shortest round-trip form), converted to S.
std::string vec_constant(double value) {
  if (std::isnan(value)) return "V(std::numeric_limits<S>::quiet_NaN())";
  if (std::isinf(value))
    return value > 0 ? "V(std::numeric_limits<S>::infinity())" : "V(-std::numeric_limits<S>::infinity())";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return "V(S(" + std::string(buf, end) + "))";
}

// An integer as a constant of an int64 or int32 kernel, exactly.
std::string int_constant(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min()) return "V(std::numeric_limits<S>::min())";
  return "V(S(" + std::to_string(value) + "))";
}

// The number `n` fills its tensor with, when it is `full(size, number)`.
std::optional<double> filled_with(const Node& n) {
  if (n.target() != "torch.ops.aten.full.default" || n.args().size() != 2) return std::nullopt;
  return number(n.args()[1]);
}

// Builds one node's expression: operands become {k} references (tensors)
// or constants (Python scalars). `dtype` is the type its operands have: S,
// or bool for a logical operator on masks.
class Builder {
 public:
  Builder(const Node& n, c10::ScalarType dtype) : n_(n), dtype_(dtype) { op_.compute = compute_of(dtype); }

  // The positional argument `i`, else the keyword `key`, else nullptr.
  const Argument* arg(size_t i, const char* key = nullptr) const {
    if (i < n_.args().size()) return &n_.args()[i];
    return key ? n_.kwarg(key) : nullptr;
  }
  // A scalar argument's value; nullopt when it is absent, None, or a tensor.
  std::optional<double> scalar(size_t i, const char* key = nullptr) const {
    const Argument* a = arg(i, key);
    if (!a) return std::nullopt;
    if (a->is<bool>()) return a->get<bool>() ? 1.0 : 0.0;
    return number(*a);
  }
  // An operand as an expression: "{k}" for a tensor of the node's dtype, a
  // constant for a number; empty when it is neither (the node is not
  // lowered: a kernel computes in one type, with no conversions).
  std::string operand(size_t i, const char* key = nullptr) { return tensor_or_scalar(i, key, dtype_); }
  // A bool tensor operand, as a mask ("{k}"); empty for anything else.
  std::string mask(size_t i, const char* key = nullptr) {
    const Argument* a = arg(i, key);
    return a && a->is_node() ? tensor_or_scalar(i, key, c10::kBool) : std::string();
  }
  std::optional<PointwiseOp> done(std::string format) {
    if (format.empty() || op_.inputs.empty()) return std::nullopt;
    op_.format = std::move(format);
    return std::move(op_);
  }

 private:
  std::string tensor_or_scalar(size_t i, const char* key, c10::ScalarType dtype) {
    const Argument* a = arg(i, key);
    if (!a) return {};
    if (Node* in = a->node()) {
      const passes::TensorMetadata* m = tensor_meta(*in);
      if (!m || m->dtype != dtype || m->is_quantized) return {};
      // A tensor of one number (decompose.cpp makes them with `full`) as
      // big as the result is that number: no load, and no tensor if
      // nothing else reads it. Not in bfloat16 or float16, whose tensor
      // holds the number rounded where the float constant would not be.
      if (const std::optional<double> v = filled_with(*in); v && compute_type(dtype)) {
        const passes::TensorMetadata* out = tensor_meta(n_);
        if (out && out->shape == m->shape) {
          if (!c10::isIntegralType(dtype, false)) return vec_constant(*v);
          if (*v == static_cast<double>(static_cast<int32_t>(*v)))
            return int_constant(static_cast<int64_t>(*v));
        }
      }
      for (size_t k = 0; k < op_.inputs.size(); ++k)
        if (op_.inputs[k] == in) return std::string("{") + std::to_string(k) + "}";
      op_.inputs.push_back(in);
      return std::string("{") + std::to_string(op_.inputs.size() - 1) + "}";
    }
    // A number among masks has no lane form: such a node stays an ATen call.
    if (dtype == c10::kBool) return {};
    // An integer kernel takes integers exactly (a double would have been
    // promoted to a float result by ATen, so it is not one of these nodes).
    if (c10::isIntegralType(dtype, false)) {
      if (!a->is<int64_t>()) return {};
      const int64_t v = a->get<int64_t>();
      // An int32 kernel takes the numbers int32 holds; ATen would wrap the
      // others, which no constant of the kernel spells.
      if (dtype == c10::kInt &&
          (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))
        return {};
      return int_constant(v);
    }
    if (auto v = scalar(i, key)) return vec_constant(*v);
    return {};
  }

  const Node& n_;
  c10::ScalarType dtype_;
  PointwiseOp op_;
};

using Rule = std::function<std::optional<PointwiseOp>(Builder&)>;

// self OP other, with alpha scaling `other` where the overload has one.
Rule binary(const char* op, bool has_alpha, bool reversed = false) {
  return [=](Builder& b) -> std::optional<PointwiseOp> {
    std::string x = b.operand(0, "self"), y = b.operand(1, "other");
    if (x.empty() || y.empty()) return std::nullopt;
    if (reversed) std::swap(x, y);
    if (has_alpha) {
      const Argument* a = b.arg(2, "alpha");
      if (a && !a->is_none()) {
        auto alpha = b.scalar(2, "alpha");
        if (!alpha) return std::nullopt;
        const std::string scale = b.operand(2, "alpha");  // exact in an int64 kernel
        if (scale.empty()) return std::nullopt;
        if (*alpha != 1.0) y = "(" + scale + " * " + y + ")";
      }
    }
    return b.done("(" + x + " " + op + " " + y + ")");
  };
}

// fn(self, other), an at::vec function of two vectors.
Rule binary_function(const char* fn) {
  return [=](Builder& b) -> std::optional<PointwiseOp> {
    std::string x = b.operand(0, "self"), y = b.operand(1, "other");
    if (x.empty() || y.empty()) return std::nullopt;
    return b.done(std::string(fn) + "(" + x + ", " + y + ")");
  };
}

// f(self) where `format` names self as $.
Rule unary(std::string format) {
  return [format](Builder& b) -> std::optional<PointwiseOp> {
    std::string x = b.operand(0, "self");
    if (x.empty()) return std::nullopt;
    std::string out;
    for (char c : format) out += c == '$' ? x : std::string(1, c);
    return b.done(out);
  };
}

// clamp(self, min=None, max=None) and its one-sided forms.
Rule clamp(const char* min_key, const char* max_key, std::optional<double> min_default = std::nullopt,
           std::optional<double> max_default = std::nullopt) {
  return [=](Builder& b) -> std::optional<PointwiseOp> {
    std::string x = b.operand(0, "self");
    if (x.empty()) return std::nullopt;
    size_t pos = 1;
    std::optional<double> lo = min_default, hi = max_default;
    if (min_key) {
      const Argument* a = b.arg(pos, min_key);
      if (a && !a->is_none() && !(lo = b.scalar(pos, min_key))) return std::nullopt;
      ++pos;
    }
    if (max_key) {
      const Argument* a = b.arg(pos, max_key);
      if (a && !a->is_none() && !(hi = b.scalar(pos, max_key))) return std::nullopt;
    }
    if (lo) x = "at::vec::clamp_min(" + x + ", " + vec_constant(*lo) + ")";
    if (hi) x = "at::vec::clamp_max(" + x + ", " + vec_constant(*hi) + ")";
    return b.done(x);
  };
}

std::optional<PointwiseOp> gelu(Builder& b) {
  std::string x = b.operand(0, "self");
  if (x.empty()) return std::nullopt;
  const Argument* a = b.arg(1, "approximate");
  const std::string approximate = a && a->is<std::string>() ? a->get<std::string>() : "none";
  if (approximate == "none")
    return b.done("(V(S(0.5)) * " + x + " * (V(S(1.0)) + (" + x + " * V(S(0.70710678118654752))).erf()))");
  if (approximate == "tanh")
    return b.done("(V(S(0.5)) * " + x + " * (V(S(1.0)) + (V(S(0.79788456080286536)) * (" + x +
                  " + V(S(0.044715)) * " + x + " * " + x + " * " + x + ")).tanh()))");
  return std::nullopt;
}

std::optional<PointwiseOp> pow_scalar(Builder& b) {
  std::string x = b.operand(0, "self");
  auto e = b.scalar(1, "exponent");
  if (x.empty() || !e) return std::nullopt;
  if (*e == 1.0) return b.done(x);
  if (*e == 2.0) return b.done("(" + x + " * " + x + ")");
  if (*e == 3.0) return b.done("(" + x + " * " + x + " * " + x + ")");
  if (*e == 0.5) return b.done(x + ".sqrt()");
  if (*e == -0.5) return b.done(x + ".rsqrt()");
  if (*e == -1.0) return b.done(x + ".reciprocal()");
  return b.done(x + ".pow(" + vec_constant(*e) + ")");
}

std::optional<PointwiseOp> leaky_relu(Builder& b) {
  std::string x = b.operand(0, "self");
  auto slope = b.arg(1, "negative_slope") ? b.scalar(1, "negative_slope") : std::optional<double>(0.01);
  if (x.empty() || !slope) return std::nullopt;
  return b.done("V::blendv(" + x + " * " + vec_constant(*slope) + ", " + x + ", " + x + " > V(S(0.0)))");
}

// The backward of pointwise activations, as a training step captures it:
// grad_output ({0}) times the derivative at self, or at the forward's
// result where the operator takes that, with ATen's formulas and its
// comparisons (which decide what a NaN self gets).
std::optional<PointwiseOp> threshold_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), x = b.operand(1, "self"), t = b.operand(2, "threshold");
  if (g.empty() || x.empty() || t.empty()) return std::nullopt;
  return b.done("V::blendv(" + g + ", V(S(0.0)), (" + x + " <= " + t + "))");
}

std::optional<PointwiseOp> hardtanh_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), x = b.operand(1, "self");
  std::string lo = b.operand(2, "min_val"), hi = b.operand(3, "max_val");
  if (g.empty() || x.empty() || lo.empty() || hi.empty()) return std::nullopt;
  // The gradient passes strictly inside (min_val, max_val): a NaN self
  // gets 0, as in ATen's vector loop.
  return b.done("V::blendv(V(S(0.0)), " + g + ", ((" + x + " > " + lo + ") & (" + x + " < " + hi + ")))");
}

std::optional<PointwiseOp> leaky_relu_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), x = b.operand(1, "self"),
              slope = b.operand(2, "negative_slope");
  if (g.empty() || x.empty() || slope.empty()) return std::nullopt;
  return b.done("V::blendv(" + g + " * " + slope + ", " + g + ", (" + x + " > V(S(0.0))))");
}

// gelu_backward(grad_output, self, approximate): grad * (cdf(x) + x * pdf(x)),
// or the derivative of the tanh form.
std::optional<PointwiseOp> gelu_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), x = b.operand(1, "self");
  if (g.empty() || x.empty()) return std::nullopt;
  const Argument* a = b.arg(2, "approximate");
  const std::string approximate = a && a->is<std::string>() ? a->get<std::string>() : "none";
  if (approximate == "none") {
    const std::string cdf = "(V(S(0.5)) * (V(S(1.0)) + (" + x + " * V(S(0.70710678118654752))).erf()))";
    const std::string pdf = "(V(S(0.3989422804014327)) * (V(S(-0.5)) * " + x + " * " + x + ").exp())";
    return b.done("(" + g + " * (" + cdf + " + " + x + " * " + pdf + "))");
  }
  if (approximate == "tanh") {
    const std::string beta = "V(S(0.79788456080286536))", kappa = "V(S(0.044715))";
    const std::string t =
        "(" + beta + " * (" + x + " + " + kappa + " * " + x + " * " + x + " * " + x + ")).tanh()";
    const std::string left = "(V(S(0.5)) * (V(S(1.0)) + " + t + "))";
    const std::string right = "(V(S(0.5)) * " + x + " * (V(S(1.0)) - " + t + " * " + t + ") * " + beta +
                              " * (V(S(1.0)) + V(S(0.134145)) * " + x + " * " + x + "))";
    return b.done("(" + g + " * (" + left + " + " + right + "))");
  }
  return std::nullopt;
}

// silu_backward(grad_output, self): grad * s * (1 + x * (1 - s)), s = sigmoid(x).
std::optional<PointwiseOp> silu_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), x = b.operand(1, "self");
  if (g.empty() || x.empty()) return std::nullopt;
  const std::string s = "(V(S(1.0)) / (V(S(1.0)) + " + x + ".neg().exp()))";
  return b.done("(" + g + " * " + s + " * (V(S(1.0)) + " + x + " * (V(S(1.0)) - " + s + ")))");
}

// sigmoid_backward(grad_output, output) and tanh_backward(grad_output,
// output) take the forward's result y: grad * y * (1 - y), grad * (1 - y * y).
std::optional<PointwiseOp> sigmoid_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), y = b.operand(1, "output");
  if (g.empty() || y.empty()) return std::nullopt;
  return b.done("(" + g + " * (V(S(1.0)) - " + y + ") * " + y + ")");
}

std::optional<PointwiseOp> tanh_backward(Builder& b) {
  std::string g = b.operand(0, "grad_output"), y = b.operand(1, "output");
  if (g.empty() || y.empty()) return std::nullopt;
  return b.done("(" + g + " * (V(S(1.0)) - " + y + " * " + y + "))");
}

// sum/mean(self, dim, keepdim, *, dtype=None) and amax/amin(self, dim,
// keepdim) over the last dimension only, with keepdim: a value per row,
// which a row kernel computes in one pass over the row.
Rule reduce(Reduction kind, bool has_dtype) {
  return [=](Builder& b) -> std::optional<PointwiseOp> {
    const Argument* self = b.arg(0, "self");
    const Argument* dim = b.arg(1, "dim");
    const Argument* keepdim = b.arg(2, "keepdim");
    if (!self || !self->is_node() || !dim || !dim->is<List>() || !keepdim || !keepdim->is<bool>() ||
        !keepdim->get<bool>())
      return std::nullopt;
    if (has_dtype) {
      const Argument* dtype = b.arg(3, "dtype");
      if (dtype && !dtype->is_none()) return std::nullopt;
    }
    const passes::TensorMetadata* in = tensor_meta(*self->node());
    const auto& dims = dim->get<List>().items;
    if (!in || in->shape.empty() || dims.size() != 1 || !dims[0].is<int64_t>()) return std::nullopt;
    const int64_t d = dims[0].get<int64_t>(), rank = static_cast<int64_t>(in->shape.size());
    if (d != -1 && d != rank - 1) return std::nullopt;
    std::string x = b.operand(0, "self");
    auto op = b.done(x);
    if (op) op->reduction = kind;
    return op;
  };
}

// where(condition, self, other) in each of its forms (a tensor or a
// number for self and other), and masked_fill(self, mask, value): a blend
// by the mask.
std::optional<PointwiseOp> where(Builder& b) {
  std::string c = b.mask(0, "condition"), x = b.operand(1, "self"), y = b.operand(2, "other");
  if (c.empty() || x.empty() || y.empty()) return std::nullopt;
  return b.done("V::blendv(" + y + ", " + x + ", " + c + ")");
}

std::optional<PointwiseOp> masked_fill(Builder& b) {
  std::string x = b.operand(0, "self"), m = b.mask(1, "mask"), v = b.operand(2, "value");
  if (x.empty() || m.empty() || v.empty()) return std::nullopt;
  return b.done("V::blendv(" + x + ", " + v + ", " + m + ")");
}

// An operator whose result has the type it computes in (S): its rule, and
// whether integer (int64, int32) kernels compute it too. Those are the operators exact on
// integers whose lane form is the same as for floats (no division, no
// transcendental functions, no reductions), with integer numbers (alpha
// too) as constants.
struct Lowering {
  Rule rule;
  bool on_integers = false;
};
constexpr bool kExactOnIntegers = true;

// By `<op>.<overload>` of torch.ops.aten.
const std::map<std::string, Lowering, std::less<>>& rules() {
  static const std::map<std::string, Lowering, std::less<>> table = {
      {"add.Tensor", {binary("+", true), kExactOnIntegers}},
      {"add.Scalar", {binary("+", true), kExactOnIntegers}},
      {"sub.Tensor", {binary("-", true), kExactOnIntegers}},
      {"sub.Scalar", {binary("-", true), kExactOnIntegers}},
      {"rsub.Scalar", {binary("-", true, true), kExactOnIntegers}},
      {"rsub.Tensor", {binary("-", true, true), kExactOnIntegers}},
      {"mul.Tensor", {binary("*", false), kExactOnIntegers}},
      {"mul.Scalar", {binary("*", false), kExactOnIntegers}},
      {"div.Tensor", {binary("/", false)}},
      {"div.Scalar", {binary("/", false)}},
      {"maximum.default", {binary_function("at::vec::maximum"), kExactOnIntegers}},
      {"minimum.default", {binary_function("at::vec::minimum"), kExactOnIntegers}},
      {"neg.default", {unary("$.neg()"), kExactOnIntegers}},
      {"relu.default", {unary("at::vec::clamp_min($, V(S(0.0)))"), kExactOnIntegers}},
      {"sigmoid.default", {unary("(V(S(1.0)) / (V(S(1.0)) + $.neg().exp()))")}},
      {"silu.default", {unary("($ / (V(S(1.0)) + $.neg().exp()))")}},
      {"tanh.default", {unary("$.tanh()")}},
      {"exp.default", {unary("$.exp()")}},
      {"log.default", {unary("$.log()")}},
      {"sqrt.default", {unary("$.sqrt()")}},
      {"rsqrt.default", {unary("$.rsqrt()")}},
      {"reciprocal.default", {unary("$.reciprocal()")}},
      {"abs.default", {unary("$.abs()"), kExactOnIntegers}},
      {"sin.default", {unary("$.sin()")}},
      {"cos.default", {unary("$.cos()")}},
      {"erf.default", {unary("$.erf()")}},
      {"hardsigmoid.default", {unary("(at::vec::clamp($ + V(S(3.0)), V(S(0.0)), V(S(6.0))) / V(S(6.0)))")}},
      {"hardswish.default", {unary("($ * at::vec::clamp($ + V(S(3.0)), V(S(0.0)), V(S(6.0))) / V(S(6.0)))")}},
      {"gelu.default", {gelu}},
      {"pow.Tensor_Scalar", {pow_scalar}},
      {"leaky_relu.default", {leaky_relu}},
      {"clamp.default", {clamp("min", "max")}},
      {"clamp_min.default", {clamp("min", nullptr)}},
      {"clamp_max.default", {clamp(nullptr, "max")}},
      {"hardtanh.default", {clamp("min_val", "max_val", -1.0, 1.0)}},
      {"threshold_backward.default", {threshold_backward}},
      {"hardtanh_backward.default", {hardtanh_backward}},
      {"leaky_relu_backward.default", {leaky_relu_backward}},
      {"gelu_backward.default", {gelu_backward}},
      {"silu_backward.default", {silu_backward}},
      {"sigmoid_backward.default", {sigmoid_backward}},
      {"tanh_backward.default", {tanh_backward}},
      {"sum.dim_IntList", {reduce(Reduction::sum, true)}},
      {"mean.dim", {reduce(Reduction::mean, true)}},
      {"amax.default", {reduce(Reduction::amax, false)}},
      {"amin.default", {reduce(Reduction::amin, false)}},
      {"where.self", {where, kExactOnIntegers}},
      {"where.ScalarSelf", {where, kExactOnIntegers}},
      {"where.ScalarOther", {where, kExactOnIntegers}},
      {"where.Scalar", {where, kExactOnIntegers}},
      {"masked_fill.Scalar", {masked_fill, kExactOnIntegers}},
      {"masked_fill.Tensor", {masked_fill, kExactOnIntegers}},
  };
  return table;
}

// Comparisons of S values: their result is a mask. NaN compares as IEEE
// says (unequal to everything), as at::vec's comparisons and ATen's do.
const std::map<std::string, Rule, std::less<>>& comparisons() {
  static const std::map<std::string, Rule, std::less<>> table = {
      {"eq.Tensor", binary("==", false)},   {"eq.Scalar", binary("==", false)},
      {"ne.Tensor", binary("!=", false)},   {"ne.Scalar", binary("!=", false)},
      {"lt.Tensor", binary("<", false)},    {"lt.Scalar", binary("<", false)},
      {"le.Tensor", binary("<=", false)},   {"le.Scalar", binary("<=", false)},
      {"gt.Tensor", binary(">", false)},    {"gt.Scalar", binary(">", false)},
      {"ge.Tensor", binary(">=", false)},   {"ge.Scalar", binary(">=", false)},
      {"isnan.default", unary("($ != $)")},
  };
  return table;
}

// Logical operators on masks (bool tensors): bitwise on the lanes' bits,
// which are all ones or all zeros.
const std::map<std::string, Rule, std::less<>>& logical() {
  static const std::map<std::string, Rule, std::less<>> table = {
      {"logical_not.default", unary("($ ^ all_ones())")}, {"bitwise_not.default", unary("($ ^ all_ones())")},
      {"logical_and.default", binary("&", false)},        {"logical_or.default", binary("|", false)},
      {"logical_xor.default", binary("^", false)},        {"bitwise_and.Tensor", binary("&", false)},
      {"bitwise_or.Tensor", binary("|", false)},          {"bitwise_xor.Tensor", binary("^", false)},
  };
  return table;
}

// The type of the first tensor operand among the node's arguments.
std::optional<c10::ScalarType> operand_type(const Node& node) {
  for (const Argument& a : node.args())
    if (a.is_node())
      if (const passes::TensorMetadata* m = tensor_meta(*a.node())) return m->dtype;
  return std::nullopt;
}

}  // namespace

std::optional<PointwiseOp> lower(const Node& node) {
  if (node.op() != Op::call_function) return std::nullopt;
  const OpsName* ops = node.target().ops_name();
  if (!ops || ops->ns != "aten") return std::nullopt;
  const passes::TensorMetadata* out = tensor_meta(node);
  if (!out || out->is_quantized) return std::nullopt;
  const std::string name = ops->op + "." + ops->overload;
  if (compute_type(compute_of(out->dtype))) {
    auto rule = rules().find(name);
    if (rule == rules().end() || (c10::isIntegralType(out->dtype, false) && !rule->second.on_integers))
      return std::nullopt;
    Builder b(node, out->dtype);
    return rule->second.rule(b);
  }
  if (out->dtype != c10::kBool) return std::nullopt;
  if (auto rule = comparisons().find(name); rule != comparisons().end()) {
    const std::optional<c10::ScalarType> compute = operand_type(node);
    if (!compute || !compute_type(compute_of(*compute))) return std::nullopt;
    Builder b(node, *compute);
    return rule->second(b);
  }
  if (auto rule = logical().find(name); rule != logical().end()) {
    Builder b(node, c10::kBool);
    return rule->second(b);
  }
  return std::nullopt;
}

}  // namespace fx::compile_detail
