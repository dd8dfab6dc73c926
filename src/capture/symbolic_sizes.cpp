// Integers that follow the dynamic sizes, written as sym_size.int nodes and
// SymInt arithmetic (symbolic_sizes.h says why from several captures).
//
// The captures are compared node by node: the same operators in the same
// order, the same arguments except integers. An integer that differs is
// given by the values it takes in the captures, and written as the first
// tensor size the graph has that takes the same values (`sym_size.int(x, 0)`,
// read right before the node that uses it, as make_fx reads it lazily), or
// else one operation on such sizes: `s + c`, `s - c`, `s * c`, `s // c`,
// `s * c + d`, `s * t`, `s + t`. The sizes with the same values are found
// through a map, so each integer costs a lookup per distinct size.

#include "symbolic_sizes.h"

#include <fx/error.h>
#include <fx/graph.h>
#include <fx/passes/shape_prop.h>
#include <fx/value.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/module.h>

#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace fx::capture_detail {

namespace {

using Values = std::vector<int64_t>;  // one integer in each capture, capture 0 first

std::string join(const Values& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

bool varies(const Values& v) {
  for (int64_t x : v)
    if (x != v[0]) return true;
  return false;
}

std::optional<int64_t> minus(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}

std::optional<int64_t> times(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}

// What captures 1.. differ in, for messages: "dimension 0 of input 'x' (s0)
// at 12 instead of 6".
class Sizes {
 public:
  Sizes(const std::vector<Symbol>& symbols, const std::vector<std::vector<int64_t>>& sizes,
        const std::vector<std::string>& names)
      : symbols_(symbols), sizes_(sizes), names_(names) {}

  std::string at(size_t capture) const {
    std::string text;
    for (size_t k = 0; k < symbols_.size(); ++k) {
      if (sizes_[capture][k] == sizes_[0][k]) continue;
      text += (text.empty() ? "" : " and ") + describe(symbols_[k], names_) + " at " +
              std::to_string(sizes_[capture][k]) + " instead of " + std::to_string(sizes_[0][k]);
    }
    return text;
  }
  // "s0 = 6, 12, 6, 18": the symbols' sizes in the captures.
  std::string table() const {
    std::string text;
    for (size_t k = 0; k < symbols_.size(); ++k) {
      Values v;
      for (const auto& s : sizes_) v.push_back(s[k]);
      text += (k ? "; " : "") + symbols_[k].name + " = " + join(v);
    }
    return text;
  }
  // `v` as an expression in the symbols, for files (torch.export writes
  // sympy's srepr): its digits when constant, the symbol's name ("s0") when
  // one symbol, else a linear form `d + c0*s0 + ...` or a product `c*si*sj`
  // in srepr. nullopt for anything else (a floor division). Each form is
  // solved from the captures that change one symbol and checked on all.
  std::optional<std::string> expression(const Values& v) const {
    if (!varies(v)) return std::to_string(v[0]);
    if (const Symbol* s = symbol(v)) return s->name;
    const size_t n = symbols_.size(), runs = sizes_.size();
    auto sym = [&](size_t k) { return "Symbol('" + symbols_[k].name + "', positive=True, integer=True)"; };
    // Linear: the coefficient of symbol k from capture k + 1, which changes it alone.
    std::vector<int64_t> c(n);
    bool linear = true;
    for (size_t k = 0; k < n && linear; ++k) {
      const auto dv = minus(v[k + 1], v[0]);
      const int64_t ds = sizes_[k + 1][k] - sizes_[0][k];
      linear = dv && *dv % ds == 0;
      if (linear) c[k] = *dv / ds;
    }
    // d + sum of c[k] * sizes[r][k]; false when it overflows.
    auto linear_at = [&](size_t r, int64_t d, int64_t& sum) {
      sum = d;
      for (size_t k = 0; k < n; ++k) {
        int64_t t;
        if (__builtin_mul_overflow(c[k], sizes_[r][k], &t) || __builtin_add_overflow(sum, t, &sum))
          return false;
      }
      return true;
    };
    int64_t at0 = 0, d = 0, at = 0;
    if (linear && linear_at(0, 0, at0) && !__builtin_sub_overflow(v[0], at0, &d)) {
      bool holds = true;
      for (size_t r = 0; r < runs && holds; ++r) holds = linear_at(r, d, at) && at == v[r];
      if (holds) {
        std::vector<std::string> terms;
        if (d != 0) terms.push_back("Integer(" + std::to_string(d) + ")");
        for (size_t k = 0; k < n; ++k)
          if (c[k] == 1)
            terms.push_back(sym(k));
          else if (c[k] != 0)
            terms.push_back("Mul(Integer(" + std::to_string(c[k]) + "), " + sym(k) + ")");
        if (terms.size() == 1) return terms[0];
        std::string sum = "Add(";
        for (size_t i = 0; i < terms.size(); ++i) sum += (i ? ", " : "") + terms[i];
        return sum + ")";
      }
    }
    for (size_t i = 0; i < n; ++i)  // c * si * sj
      for (size_t j = i; j < n; ++j) {
        const auto p0 = times(sizes_[0][i], sizes_[0][j]);
        if (!p0 || v[0] % *p0 != 0) continue;
        const int64_t k = v[0] / *p0;
        bool holds = true;
        for (size_t r = 0; r < runs && holds; ++r) {
          const auto p = times(sizes_[r][i], sizes_[r][j]);
          holds = p && times(*p, k) == v[r];
        }
        if (!holds) continue;
        const std::string product = i == j ? "Pow(" + sym(i) + ", Integer(2))" : sym(i) + ", " + sym(j);
        if (k == 1) return i == j ? product : "Mul(" + product + ")";
        return "Mul(Integer(" + std::to_string(k) + "), " + product + ")";
      }
    return std::nullopt;
  }

  // The symbol whose sizes are `v`, if one is.
  const Symbol* symbol(const Values& v) const {
    for (size_t k = 0; k < symbols_.size(); ++k) {
      bool same = true;
      for (size_t r = 0; r < sizes_.size() && same; ++r) same = sizes_[r][k] == v[r];
      if (same) return &symbols_[k];
    }
    return nullptr;
  }

 private:
  const std::vector<Symbol>& symbols_;
  const std::vector<std::vector<int64_t>>& sizes_;
  const std::vector<std::string>& names_;
};

// A graph's nodes in order, and each node's position in that order.
struct Nodes {
  std::vector<Node*> list;
  std::unordered_map<const Node*, size_t> position;
  explicit Nodes(const Graph& g) {
    for (Node* n : g.nodes()) {
      position.emplace(n, list.size());
      list.push_back(n);
    }
  }
};

// How an integer is computed from sizes: `a` alone, or one operation.
struct Fit {
  enum class Kind { size, add, sub, mul, floordiv, mul_add, mul_sub, mul_sizes, add_sizes } kind;
  size_t a = 0, b = 0;  // atoms (tensor sizes)
  int64_t c = 0, d = 0;
  bool compound() const { return kind != Kind::size; }
};

const std::vector<int64_t>* shape_of(const Node* n) {
  const auto* m = n->meta().get<passes::TensorMetadata>("tensor_meta");
  return m ? &m->shape : nullptr;
}

class SizeWriter {
 public:
  SizeWriter(GraphModule& base, std::vector<const GraphModule*> others, const Sizes& sizes,
             std::string module)
      : base_(base), others_(std::move(others)), sizes_(sizes), module_(std::move(module)) {}

  void run() {
    Nodes base(base_.graph());
    for (const GraphModule* o : others_) nodes_.emplace_back(o->graph());
    for (size_t r = 0; r < nodes_.size(); ++r)
      if (nodes_[r].list.size() != base.list.size())
        differ(r + 1, base.list.back(),
               std::string("it has ") + std::to_string(base.list.size()) +
                   " nodes at the example's sizes and " + std::to_string(nodes_[r].list.size()) +
                   " at those");
    base_position_ = &base.position;
    for (size_t i = 0; i < base.list.size(); ++i) {
      Node* n = base.list[i];
      others_at_.clear();
      for (auto& nodes : nodes_) others_at_.push_back(nodes.list[i]);
      compare_node(n);
      rewrite_arguments(n);
      add_sizes_of(n);
    }
    compare_branches();
  }

 private:
  // ---- comparing -----------------------------------------------------------

  std::string node_text(const Node* n) const {
    return "node '" + n->name() + "'" + (module_.empty() ? "" : " of the branch '" + module_ + "'");
  }

  [[noreturn]] void differ(size_t capture, const Node* n, const std::string& how) const {
    throw TraceError("capture: with " + sizes_.at(capture) + " the graph differs at " + node_text(n) + ": " +
                     how +
                     ". The code takes another path at that size (a branch or a loop on a size), so the "
                     "dimension cannot be dynamic: leave it static, or narrow its Dim's range to sizes that "
                     "take one path");
  }

  void compare_node(const Node* n) const {
    for (size_t r = 0; r < others_at_.size(); ++r) {
      const Node* o = others_at_[r];
      if (o->op() != n->op() || !(o->target() == n->target()) || o->name() != n->name())
        differ(r + 1, n,
               "it is " + std::string(op_name(n->op())) + " " + n->target().str() +
                   " at the example's sizes and '" + o->name() + "', " + std::string(op_name(o->op())) + " " +
                   o->target().str() + " at those");
      if (o->kwargs().size() != n->kwargs().size() || o->args().size() != n->args().size())
        differ(r + 1, n, "its arguments differ in number");
      for (size_t k = 0; k < n->kwargs().size(); ++k)
        if (o->kwargs()[k].first != n->kwargs()[k].first) differ(r + 1, n, "its keyword arguments differ");
    }
  }

  // ---- rewriting the integers ---------------------------------------------

  // Visits `a` and the same place in the other captures. Collecting, it
  // checks they differ only in integers and fits each integer that does;
  // replacing, it puts the next written node in each such place.
  Argument visit(const Argument& a, const std::vector<const Argument*>& others, const std::string& where,
                 bool collect) {
    auto mismatch = [&](size_t r, const std::string& how) {
      differ(r + 1, current_, "its argument " + where + " " + how);
    };
    if (a.is<int64_t>()) {
      Values v{a.get<int64_t>()};
      for (size_t r = 0; r < others.size(); ++r) {
        if (!others[r]->is<int64_t>())
          mismatch(r, "is an int at the example's sizes and a " + std::string(others[r]->kind_name()) +
                          " at those");
        v.push_back(others[r]->get<int64_t>());
      }
      if (!varies(v)) return a;
      if (collect) {
        fits_.push_back(fit(v, where));
        return a;
      }
      return Argument(written_[next_written_++]);
    }
    if (a.is<double>() && collect) {
      for (size_t r = 0; r < others.size(); ++r)
        if (!others[r]->is<double>() || others[r]->get<double>() != a.get<double>()) {
          if (others[r]->is<double>())
            throw TraceError(
                "capture: the float argument " + where + " of " + node_text(current_) + " is " +
                std::to_string(a.get<double>()) + " at the example's sizes and " +
                std::to_string(others[r]->get<double>()) + " with " + sizes_.at(r + 1) +
                ": fxcpp makes integer sizes symbolic, not floats computed from them. Compute it "
                "with tensor operators, or leave the dimension static");
          mismatch(r, "differs");
        }
      return a;
    }
    auto items = [&](const std::vector<Argument>& base_items, auto get_items) {
      std::vector<Argument> out;
      for (size_t i = 0; i < base_items.size(); ++i) {
        std::vector<const Argument*> at;
        for (size_t r = 0; r < others.size(); ++r) {
          const std::vector<Argument>* theirs = get_items(*others[r]);
          if (!theirs || theirs->size() != base_items.size()) mismatch(r, "has another length or kind");
          at.push_back(&(*theirs)[i]);
        }
        out.push_back(visit(base_items[i], at, where + "[" + std::to_string(i) + "]", collect));
      }
      return out;
    };
    if (a.is<List>())
      return List{items(a.get<List>().items,
                        [](const Argument& o) { return o.is<List>() ? &o.get<List>().items : nullptr; })};
    if (a.is<Tuple>())
      return Tuple{items(a.get<Tuple>().items,
                         [](const Argument& o) { return o.is<Tuple>() ? &o.get<Tuple>().items : nullptr; })};
    if (a.is<Dict>()) {
      Dict out;
      for (size_t i = 0; i < a.get<Dict>().items.size(); ++i) {
        const auto& [key, value] = a.get<Dict>().items[i];
        std::vector<const Argument*> at;
        for (size_t r = 0; r < others.size(); ++r) {
          if (!others[r]->is<Dict>() || others[r]->get<Dict>().items.size() <= i ||
              others[r]->get<Dict>().items[i].first != key)
            mismatch(r, "has other keys");
          at.push_back(&others[r]->get<Dict>().items[i].second);
        }
        out.items.emplace_back(key, visit(value, at, where + "['" + key + "']", collect));
      }
      return out;
    }
    if (!collect) return a;
    for (size_t r = 0; r < others.size(); ++r) {
      const Argument& o = *others[r];
      if (a.is_node()) {
        if (!o.is_node() || nodes_[r].position.at(o.node()) != base_position_->at(a.node()))
          mismatch(r, "is another value");
      } else if (a.is<Opaque>()) {
        if (!o.is<Opaque>() || o.get<Opaque>().repr != a.get<Opaque>().repr) mismatch(r, "differs");
      } else if (!(o == a)) {
        mismatch(r, "differs");
      }
    }
    return a;
  }

  void rewrite_arguments(Node* n) {
    current_ = n;
    fits_.clear();
    auto others_args = [&](size_t i) {
      std::vector<const Argument*> at;
      for (const Node* o : others_at_) at.push_back(&o->args()[i]);
      return at;
    };
    auto others_kwargs = [&](size_t i) {
      std::vector<const Argument*> at;
      for (const Node* o : others_at_) at.push_back(&o->kwargs()[i].second);
      return at;
    };
    for (size_t i = 0; i < n->args().size(); ++i)
      visit(n->args()[i], others_args(i), std::string("args[") + std::to_string(i) + "]", true);
    for (size_t i = 0; i < n->kwargs().size(); ++i)
      visit(n->kwargs()[i].second, others_kwargs(i), "kwargs['" + n->kwargs()[i].first + "']", true);
    if (fits_.empty()) return;
    // Python computes `b * 2` before the call that takes it, and reads a
    // size it passes as it is at the call: arithmetic first, then sizes.
    written_.assign(fits_.size(), nullptr);
    {
      auto at = n->graph().inserting_before(n);
      for (size_t k = 0; k < fits_.size(); ++k)
        if (fits_[k].compound()) written_[k] = write(fits_[k]);
      for (size_t k = 0; k < fits_.size(); ++k)
        if (!fits_[k].compound()) written_[k] = write(fits_[k]);
    }
    next_written_ = 0;
    Args args;
    for (size_t i = 0; i < n->args().size(); ++i)
      args.push_back(visit(n->args()[i], others_args(i), "", false));
    Kwargs kwargs;
    for (size_t i = 0; i < n->kwargs().size(); ++i)
      kwargs.emplace_back(n->kwargs()[i].first, visit(n->kwargs()[i].second, others_kwargs(i), "", false));
    n->set_args(std::move(args));
    n->set_kwargs(std::move(kwargs));
  }

  // ---- sizes and fitting ----------------------------------------------------

  struct Atom {
    Values values;
    Node* node;
    int64_t dim;
    Node* read = nullptr;  // its sym_size.int node, once written
  };

  // Dimension (or stride) `d` of n's value in each capture; add_sizes_of has
  // checked that every capture has as many.
  Values values_of(const Node* n, std::vector<int64_t> passes::TensorMetadata::*field, size_t d) const {
    Values v{(n->meta().get<passes::TensorMetadata>("tensor_meta")->*field)[d]};
    for (const Node* o : others_at_)
      v.push_back((o->meta().get<passes::TensorMetadata>("tensor_meta")->*field)[d]);
    return v;
  }

  // The sizes of n's value: each that follows the symbols is an atom (the
  // first tensor with it is read for it), and n's meta records them.
  void add_sizes_of(Node* n) {
    const std::vector<int64_t>* shape = shape_of(n);
    if (!shape) return;
    for (size_t r = 0; r < others_at_.size(); ++r) {
      const std::vector<int64_t>* s = shape_of(others_at_[r]);
      if (!s || s->size() != shape->size())
        differ(r + 1, n,
               std::string("its result has ") + std::to_string(shape->size()) +
                   " dimensions at the example's sizes and " +
                   (s ? std::to_string(s->size()) : std::string("none")) + " at those");
    }
    std::vector<Values> dims;
    for (size_t d = 0; d < shape->size(); ++d) {
      const Values& v = dims.emplace_back(values_of(n, &passes::TensorMetadata::shape, d));
      if (!varies(v)) continue;
      if (n->op() == Op::get_attr)
        throw TraceError(
            "capture: the tensor attribute '" + n->target().str() + "' (" + node_text(n) +
            std::string(") has dimension ") + std::to_string(d) + " of sizes " + join(v) + " for " +
            sizes_.table() +
            ": a tensor made outside the captured operators follows a dynamic size. Make it inside "
            "the function, or leave the dimension static");
      if (atom_of_.emplace(v, atoms_.size()).second) atoms_.push_back(Atom{v, n, static_cast<int64_t>(d)});
    }
    annotate_sizes(n, dims);
    if (module_.empty() && n->op() == Op::placeholder) record_input_sizes(n, dims);
  }

  // meta["sym_sizes"] and ["sym_strides"] of a tensor whose sizes or
  // strides follow the symbols: one expression per dimension (Sizes::
  // expression), for the .pt2 writer; meta["sym_sizes_unknown"] names the
  // first dimension that has none.
  void annotate_sizes(Node* n, const std::vector<Values>& dims) {
    std::vector<Values> strides;
    for (size_t d = 0; d < dims.size(); ++d)
      strides.push_back(values_of(n, &passes::TensorMetadata::stride, d));
    bool follows = false;
    for (const Values& v : dims) follows |= varies(v);
    for (const Values& v : strides) follows |= varies(v);
    if (!follows) return;
    auto expressions = [&](const std::vector<Values>& values, const char* what,
                           std::vector<std::string>& out) {
      for (size_t d = 0; d < values.size(); ++d) {
        auto e = sizes_.expression(values[d]);
        if (!e) {
          n->meta().set("sym_sizes_unknown", std::string(what) + " " + std::to_string(d) + " is " +
                                                 join(values[d]) + " for " + sizes_.table());
          return false;
        }
        out.push_back(*e);
      }
      return true;
    };
    std::vector<std::string> size_exprs, stride_exprs;
    if (!expressions(dims, "dimension", size_exprs) || !expressions(strides, "stride", stride_exprs)) return;
    n->meta().set("sym_sizes", std::move(size_exprs));
    n->meta().set("sym_strides", std::move(stride_exprs));
  }

  // meta["sym_sizes"] of an input: "s0" where the size is a symbol, else the
  // size, as a loaded .pt2 program's placeholders have them; and
  // meta["sym_dims"], the Dim of each of its symbols (its range), which
  // to_exported_program makes the program's range constraints.
  void record_input_sizes(Node* n, const std::vector<Values>& dims) {
    std::vector<std::string> sym_sizes;
    std::map<std::string, Dim> sym_dims;
    for (const Values& v : dims) {
      const Symbol* s = sizes_.symbol(v);
      sym_sizes.push_back(s ? s->name : std::to_string(v[0]));
      if (s) sym_dims.emplace(s->name, s->dim);
    }
    n->meta().set("sym_sizes", std::move(sym_sizes));
    if (!sym_dims.empty()) n->meta().set("sym_dims", std::move(sym_dims));
  }

  // meta["sym_expr"] (Sizes::expression) and ["sym_hint"] (the example's
  // value) of a written SymInt node, for the .pt2 writer.
  Node* annotate(Node* n, const Values& v) {
    if (auto e = sizes_.expression(v))
      n->meta().set("sym_expr", *e);
    else
      n->meta().set("sym_sizes_unknown", "its value is " + join(v) + " for " + sizes_.table());
    n->meta().set("sym_hint", v[0]);
    return n;
  }

  std::optional<size_t> atom(const Values& v) const {
    auto it = atom_of_.find(v);
    return it == atom_of_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }

  // The simplest way to compute `v` from sizes the graph has so far.
  Fit fit(const Values& v, const std::string& where) const {
    if (auto a = atom(v)) return {Fit::Kind::size, *a};
    const size_t runs = v.size();
    auto all = [&](auto pred) {
      for (size_t r = 0; r < runs; ++r)
        if (!pred(r)) return false;
      return true;
    };
    // Integers of the graph can be anything (INT64_MAX as a slice's end):
    // the arithmetic below checks for overflow, where a match is impossible.
    for (size_t i = 0; i < atoms_.size(); ++i) {  // s + c, s - c
      const Values& s = atoms_[i].values;
      const auto c = minus(v[0], s[0]);
      if (c && *c != std::numeric_limits<int64_t>::min() &&
          all([&](size_t r) { return minus(v[r], s[r]) == c; }))
        return *c > 0 ? Fit{Fit::Kind::add, i, 0, *c} : Fit{Fit::Kind::sub, i, 0, -*c};
    }
    for (size_t i = 0; i < atoms_.size(); ++i) {  // s * c
      const Values& s = atoms_[i].values;
      if (s[0] == 0 || v[0] % s[0] != 0) continue;
      const int64_t c = v[0] / s[0];
      if (all([&](size_t r) { return times(s[r], c) == v[r]; })) return {Fit::Kind::mul, i, 0, c};
    }
    for (size_t i = 0; i < atoms_.size(); ++i) {  // s // c
      const Values& s = atoms_[i].values;
      // c with s // c == v in every capture: s / (v + 1) < c <= s / v.
      int64_t lo = 2, hi = std::numeric_limits<int64_t>::max();
      for (size_t r = 0; r < runs && lo <= hi; ++r) {
        if (v[r] <= 0 || v[r] == std::numeric_limits<int64_t>::max())
          hi = 0;
        else {
          lo = std::max(lo, s[r] / (v[r] + 1) + 1);
          hi = std::min(hi, s[r] / v[r]);
        }
      }
      if (lo <= hi) return {Fit::Kind::floordiv, i, 0, lo};
    }
    for (size_t i = 0; i < atoms_.size(); ++i) {  // s * c + d
      const Values& s = atoms_[i].values;
      size_t r1 = 1;
      while (r1 < runs && s[r1] == s[0]) ++r1;
      if (r1 == runs) continue;
      const auto dv = minus(v[r1], v[0]);
      const int64_t ds = s[r1] - s[0];  // sizes: no overflow
      if (!dv || *dv % ds != 0) continue;
      const int64_t c = *dv / ds;
      const auto cs = times(c, s[0]);
      const auto d = cs ? minus(v[0], *cs) : std::nullopt;
      if (c > 1 && d && *d != 0 && *d != std::numeric_limits<int64_t>::min() && all([&](size_t r) {
            const auto x = times(c, s[r]);
            return x && minus(v[r], *x) == d;
          }))
        return *d > 0 ? Fit{Fit::Kind::mul_add, i, 0, c, *d} : Fit{Fit::Kind::mul_sub, i, 0, c, -*d};
    }
    for (size_t i = 0; i < atoms_.size(); ++i) {  // s * t, s + t
      const Values& s = atoms_[i].values;
      Values quotient(runs), rest(runs);
      bool divides = true, subtracts = true;
      for (size_t r = 0; r < runs; ++r) {
        divides = divides && s[r] != 0 && v[r] % s[r] == 0;
        quotient[r] = divides ? v[r] / s[r] : 0;
        const auto d = minus(v[r], s[r]);
        subtracts = subtracts && d;
        rest[r] = d.value_or(0);
      }
      if (divides)
        if (auto t = atom(quotient)) return {Fit::Kind::mul_sizes, std::min(i, *t), std::max(i, *t)};
      if (subtracts)
        if (auto t = atom(rest)) return {Fit::Kind::add_sizes, std::min(i, *t), std::max(i, *t)};
    }
    throw TraceError(
        "capture: the argument " + where + " of " + node_text(current_) + " is " + join(v) + " for " +
        sizes_.table() +
        ", which is neither a size of a tensor before it nor one sum, difference, product or "
        "quotient of such a size that fxcpp can find. Compute it from tensor sizes in fewer steps, "
        "or leave the dimension static");
  }

  Node* read(size_t a) {
    Atom& atom = atoms_[a];
    if (!atom.read)
      atom.read = annotate(base_.graph().call_function("torch.ops.aten.sym_size.int", {atom.node, atom.dim}),
                           atom.values);
    return atom.read;
  }

  // `lhs <target> rhs`, whose values in the captures are `v`.
  Node* op(const char* target, Node* lhs, const Argument& rhs, const Values& v) {
    std::string key = std::string(target) + " " + lhs->name() + " ";
    key += rhs.is_node() ? rhs.node()->name() : std::to_string(rhs.get<int64_t>());
    auto it = arithmetic_.find(key);
    if (it != arithmetic_.end()) return it->second;
    Node* n = annotate(base_.graph().call_function(target, {lhs, rhs}), v);
    arithmetic_.emplace(std::move(key), n);
    return n;
  }

  // The values in the captures of `f` applied to them: the fit checked
  // these without overflow.
  Values apply(const Values& s, int64_t (*f)(int64_t, int64_t), int64_t c) const {
    Values out(s.size());
    for (size_t r = 0; r < s.size(); ++r) out[r] = f(s[r], c);
    return out;
  }

  Node* write(const Fit& f) {
    using K = Fit::Kind;
    static constexpr auto add = [](int64_t a, int64_t b) { return a + b; };
    static constexpr auto sub = [](int64_t a, int64_t b) { return a - b; };
    static constexpr auto mul = [](int64_t a, int64_t b) { return a * b; };
    static constexpr auto div = [](int64_t a, int64_t b) { return a / b; };  // sizes: floor
    const Values& a = atoms_[f.a].values;
    switch (f.kind) {
      case K::size:
        return read(f.a);
      case K::add:
        return op("operator.add", read(f.a), f.c, apply(a, add, f.c));
      case K::sub:
        return op("operator.sub", read(f.a), f.c, apply(a, sub, f.c));
      case K::mul:
        return op("operator.mul", read(f.a), f.c, apply(a, mul, f.c));
      case K::floordiv:
        return op("operator.floordiv", read(f.a), f.c, apply(a, div, f.c));
      case K::mul_add:
      case K::mul_sub: {
        const Values scaled = apply(a, mul, f.c);
        Node* product = op("operator.mul", read(f.a), f.c, scaled);
        return f.kind == K::mul_add ? op("operator.add", product, f.d, apply(scaled, add, f.d))
                                    : op("operator.sub", product, f.d, apply(scaled, sub, f.d));
      }
      case K::mul_sizes:
      case K::add_sizes: {
        const Values& b = atoms_[f.b].values;
        Values v(a.size());
        for (size_t r = 0; r < a.size(); ++r) v[r] = f.kind == K::mul_sizes ? a[r] * b[r] : a[r] + b[r];
        Node* lhs = read(f.a);
        return op(f.kind == K::mul_sizes ? "operator.mul" : "operator.add", lhs, read(f.b), v);
      }
    }
    return nullptr;
  }

  // ---- placeholders and branches ------------------------------------------

  // The branches of cond and while_loop: the same in every capture but for
  // the sizes of their tensors. A branch reads its sizes from its own
  // operands, as torch.export writes a branch (a branch cannot read the
  // code around it), and is recompiled as a GraphModule of its own.
  void compare_branches() {
    for (const auto& child : base_.named_children()) {
      auto* branch = dynamic_cast<GraphModule*>(child.value().get());
      if (!branch) continue;
      std::vector<const GraphModule*> theirs;
      for (const GraphModule* o : others_) {
        const auto* t = dynamic_cast<const GraphModule*>(o->get_submodule(child.key()));
        if (!t)
          differ(theirs.size() + 1, base_.graph().output_node(),
                 "the branch '" + child.key() + "' is missing");
        theirs.push_back(t);
      }
      SizeWriter(*branch, theirs, sizes_, module_.empty() ? child.key() : module_ + "." + child.key()).run();
      branch->recompile();
    }
  }

  GraphModule& base_;
  std::vector<const GraphModule*> others_;
  const Sizes& sizes_;
  std::string module_;  // the branch's path; empty for the captured graph
  std::vector<Nodes> nodes_;
  const std::unordered_map<const Node*, size_t>* base_position_ = nullptr;
  std::vector<const Node*> others_at_;
  Node* current_ = nullptr;
  std::vector<Fit> fits_;
  std::vector<Node*> written_;
  size_t next_written_ = 0;
  std::vector<Atom> atoms_;
  std::map<Values, size_t> atom_of_;
  std::unordered_map<std::string, Node*> arithmetic_;
};

}  // namespace

void make_sizes_symbolic(GraphModule& base, const std::vector<const GraphModule*>& others,
                         const std::vector<Symbol>& symbols, const std::vector<std::vector<int64_t>>& sizes,
                         const std::vector<std::string>& names) {
  Sizes s(symbols, sizes, names);
  SizeWriter(base, others, s, "").run();
  base.recompile();
}

std::unique_ptr<GraphModule> capture_dynamic(const CaptureAt& capture_at,
                                             const std::vector<c10::IValue>& inputs,
                                             const std::vector<std::string>& names,
                                             const CaptureOptions& options, torch::nn::Module* root) {
  const std::vector<Symbol> symbols = symbols_of(inputs, names, options);
  if (symbols.empty()) return capture_at(inputs);
  const auto sizes = capture_sizes(symbols);
  std::unique_ptr<GraphModule> base = capture_at(inputs);
  // The other captures run the code again: whatever they do to the
  // buffers (batch norm's running statistics) is undone.
  struct RestoreBuffers {
    std::vector<std::pair<at::Tensor, at::Tensor>> saved;
    ~RestoreBuffers() {
      c10::AutoGradMode no_grad(false);
      for (auto& [buffer, value] : saved) buffer.copy_(value);
    }
  } restore;
  if (root)
    for (const auto& b : root->named_buffers(/*recurse=*/true))
      if (b.value().defined()) restore.saved.emplace_back(b.value(), b.value().clone());
  Sizes text(symbols, sizes, names);
  std::vector<std::unique_ptr<GraphModule>> others;
  for (size_t r = 1; r < sizes.size(); ++r) {
    try {
      others.push_back(capture_at(inputs_at(inputs, symbols, sizes[r])));
    } catch (const Error& e) {
      throw TraceError("capture: with " + text.at(r) + " the function fails: " + e.what() +
                       "\nA dynamic dimension must work at every size of its Dim's range: narrow the range "
                       "(Dim::min, Dim::max), give dimensions that must be equal the same Dim name, or leave "
                       "the dimension static");
    }
  }
  std::vector<const GraphModule*> views;
  for (const auto& o : others) views.push_back(o.get());
  make_sizes_symbolic(*base, views, symbols, sizes, names);
  return base;
}

}  // namespace fx::capture_detail
