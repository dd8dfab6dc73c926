// The C++ forward of a GraphModule: one statement per node, plain LibTorch calls.
#include <fx/error.h>
#include <fx/graph_module.h>
#include <fx/operator_overloads.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string_view>

#include "../ir/repr.h"
#include "cpp_emit.h"

namespace fx::codegen {

// ---- names and literals ------------------------------------------------------

namespace {

// C++ keywords, and the names the generated code itself uses.
constexpr std::string_view kReserved[] = {
    "alignas",     "alignof",   "and",        "and_eq",    "asm",      "auto",         "bitand",
    "bitor",       "bool",      "break",      "case",      "catch",    "char",         "char8_t",
    "char16_t",    "char32_t",  "class",      "compl",     "concept",  "const",        "consteval",
    "constexpr",   "constinit", "const_cast", "continue",  "co_await", "co_return",    "co_yield",
    "decltype",    "default",   "delete",     "do",        "double",   "dynamic_cast", "else",
    "enum",        "explicit",  "export",     "extern",    "false",    "float",        "for",
    "friend",      "goto",      "if",         "inline",    "int",      "long",         "mutable",
    "namespace",   "new",       "noexcept",   "not",       "not_eq",   "nullptr",      "operator",
    "or",          "or_eq",     "private",    "protected", "public",   "register",     "reinterpret_cast",
    "requires",    "return",    "short",      "signed",    "sizeof",   "static",       "static_assert",
    "static_cast", "struct",    "switch",     "template",  "this",     "thread_local", "throw",
    "true",        "try",       "typedef",    "typeid",    "typename", "union",        "unsigned",
    "using",       "virtual",   "void",       "volatile",  "wchar_t",  "while",        "xor",
    "xor_eq",      "self",      "at",         "torch",     "c10",      "std"};

}  // namespace

CppNames::CppNames() {
  for (auto r : kReserved) taken_.emplace(r);
}

std::string CppNames::make(const std::string& want) {
  std::string base;
  for (char c : want) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
  // Identifiers with a double underscore anywhere, or starting with
  // _Capital, are the implementation's: a run of underscores becomes one
  // (`true_graph_0._tensor_constant0` is true_graph_0_tensor_constant0), and
  // _Capital gets a `v` before it.
  base.erase(std::unique(base.begin(), base.end(), [](char a, char b) { return a == '_' && b == '_'; }),
             base.end());
  if (base[0] == '_' && base.size() > 1 && std::isupper(static_cast<unsigned char>(base[1])))
    base = "v" + base;
  if (taken_.insert(base).second) return base;
  // `x_` takes `x_1`, not `x__1`.
  const std::string stem = base.back() == '_' ? base : base + "_";
  for (size_t& i = next_suffix_[base];;) {
    std::string candidate = stem + std::to_string(++i);
    if (taken_.insert(candidate).second) return candidate;
  }
}

std::string cpp_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string cpp_double(double d) {
  if (std::isinf(d))
    return d > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  if (std::isnan(d)) return "std::numeric_limits<double>::quiet_NaN()";
  std::string r = detail::repr_float(d);  // shortest round-trip digits, as Python prints them
  if (r.find_first_of(".e") == std::string::npos) r += ".0";
  return r;
}

std::string cpp_int_list(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  out += "}";
  return !items.empty() && items[0] == "0" ? "at::IntArrayRef" + out : out;
}

std::string cpp_dtype(c10::ScalarType t) { return std::string("at::k") + c10::toString(t); }

std::string cpp_type(Kind k) {
  switch (k) {
    case Kind::tensor:
      return "at::Tensor";
    case Kind::integer:
      return "int64_t";
    case Kind::real:
      return "double";
    case Kind::boolean:
      return "bool";
    case Kind::int_list:
      return "std::vector<int64_t>";
    case Kind::tensor_list:
      return "std::vector<at::Tensor>";
    case Kind::dtype:
      return "at::ScalarType";
    case Kind::device:
      return "at::Device";
    case Kind::str:
      return "std::string";
    case Kind::tuple:
    case Kind::none:
      break;
  }
  return "auto";
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

namespace {

bool is_number(Kind k) { return k == Kind::integer || k == Kind::real || k == Kind::boolean; }

std::string kind_name(Kind k) {
  switch (k) {
    case Kind::tensor:
      return "Tensor";
    case Kind::integer:
      return "int";
    case Kind::real:
      return "float";
    case Kind::boolean:
      return "bool";
    case Kind::int_list:
      return "int list";
    case Kind::tensor_list:
      return "Tensor list";
    case Kind::tuple:
      return "tuple";
    case Kind::none:
      return "None";
    case Kind::str:
      return "str";
    case Kind::dtype:
      return "dtype";
    case Kind::device:
      return "device";
  }
  return "?";
}

// The C++ spelling of a memory format. (c10::toString has no overload for
// it: a call converts it to TensorOptions and prints those.)
std::string cpp_memory_format(c10::MemoryFormat f) {
  switch (f) {
    case c10::MemoryFormat::Contiguous:
      return "at::MemoryFormat::Contiguous";
    case c10::MemoryFormat::Preserve:
      return "at::MemoryFormat::Preserve";
    case c10::MemoryFormat::ChannelsLast:
      return "at::MemoryFormat::ChannelsLast";
    case c10::MemoryFormat::ChannelsLast3d:
      return "at::MemoryFormat::ChannelsLast3d";
    case c10::MemoryFormat::NumOptions:
      break;
  }
  throw Error("export_cpp: an invalid memory format");
}

// Whether C++ has the ATen overload `name`.`overload` only as a Tensor method
// (x.view(size)): there is no at::view.
bool method_only(const std::string& name, const std::string& overload) {
  static const std::unordered_set<std::string_view> names = {
#include "aten_method_only.inc"
  };
  return names.count(name + "." + (overload.empty() ? "default" : overload)) != 0;
}

// ---- the emitter ----------------------------------------------------------------

// What the emitters of a forward and of the subgraphs written inline in it
// share: one body, one set of names (so that a branch's variables shadow
// nothing), one set of weights.
struct ForwardState {
  CppForward out;
  CppNames local_names, member_names;
  std::unordered_map<std::string, size_t> weight_index;
  std::unordered_map<std::string, std::vector<c10::OperatorHandle>> overloads;  // by ATen name
  int depth = 0;                                                                // of braces
};

class ForwardEmitter final : public Emitter {
 public:
  ForwardEmitter(const GraphModule& gm, const ExtraCalls& extra, ForwardState& state)
      : ForwardEmitter(gm, extra, state, "", nullptr) {
    // The generated file's helpers and the class's method.
    for (const char* name : {"py_floordiv", "py_mod", "py_slice"}) local_names_.make(name);
    member_names_.make("forward");
  }

  void run() {
    for (const Node* n : gm_.graph().nodes()) emit(n);
  }

  // ---- Emitter ----
  CppValue value(const Argument& a) override {
    return std::visit(
        [&](const auto& v) -> CppValue {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, NoneType>) {
            return {"c10::nullopt", Kind::none, {}};
          } else if constexpr (std::is_same_v<T, bool>) {
            return {v ? "true" : "false", Kind::boolean, {}};
          } else if constexpr (std::is_same_v<T, int64_t>) {
            std::string s = std::to_string(v);
            if (v > INT32_MAX || v < INT32_MIN) s = "int64_t{" + s + "}";
            return {s, Kind::integer, {}};
          } else if constexpr (std::is_same_v<T, double>) {
            return {cpp_double(v), Kind::real, {}};
          } else if constexpr (std::is_same_v<T, std::string>) {
            return {cpp_string(v), Kind::str, {}};
          } else if constexpr (std::is_same_v<T, Node*>) {
            auto it = values_.find(v);
            if (it == values_.end()) fail(current_, "uses '" + v->name() + "' before it is defined");
            if (subgraphs_.count(v))
              fail(current_, "uses the subgraph '" + v->name() + "', which only cond and while_loop take");
            if (it->second.kind == Kind::none)
              fail(current_, "uses '" + v->name() + "', which has no value in C++ (None)");
            return it->second;
          } else if constexpr (std::is_same_v<T, Tuple> || std::is_same_v<T, List>) {
            return sequence(v.items);
          } else if constexpr (std::is_same_v<T, c10::ScalarType>) {
            return {cpp_dtype(v), Kind::dtype, {}};
          } else if constexpr (std::is_same_v<T, c10::Device>) {
            return {"at::Device(" + cpp_string(v.str()) + ")", Kind::device, {}};
          } else if constexpr (std::is_same_v<T, c10::Layout>) {
            if (v != c10::kStrided) fail(current_, "uses a layout other than torch.strided");
            return {"at::kStrided", Kind::integer, {}};
          } else if constexpr (std::is_same_v<T, c10::MemoryFormat>) {
            return {cpp_memory_format(v), Kind::integer, {}};
          } else {
            fail(current_, "has an argument of kind " + std::string(a.kind_name()) +
                               " that fxcpp cannot spell in C++ here");
          }
        },
        a.storage());
  }

  std::string weight(const std::string& path) override {
    // A subgraph's weights are the root GraphModule's under its path.
    const std::string full = prefix_ + path;
    if (auto it = weight_index_.find(full); it != weight_index_.end())
      return "self." + out_.weights[it->second].member;
    at::Tensor t = gm_.get_tensor(path);
    weight_index_.emplace(full, out_.weights.size());
    out_.weights.push_back(Weight{full, member_names_.make(full), t});
    return "self." + out_.weights.back().member;
  }

  void line(const std::string& text) override {
    out_.body += std::string(2 * static_cast<size_t>(state_.depth + 1), ' ') + text + "\n";
  }
  std::string temp(const std::string& base) override { return local_names_.make(base); }
  void indent(int levels) override { state_.depth += levels; }

  std::vector<CppValue> inline_graph(const Node* n, const std::string& path,
                                     const std::vector<CppValue>& inputs) override {
    const auto* sub = dynamic_cast<const GraphModule*>(gm_.get_submodule(path));
    if (!sub) fail(n, "reads '" + path + "', which is no GraphModule of the graph");
    std::vector<CppValue> results;
    ForwardEmitter inner(*sub, extra_, state_, prefix_ + path + ".", &results);
    size_t placeholders = 0;
    for (const Node* p : sub->graph().nodes()) {
      if (p->op() != Op::placeholder) continue;
      if (placeholders == inputs.size())
        fail(n, "passes '" + path + "' " + std::to_string(inputs.size()) + " operand(s); it takes more");
      inner.values_[p] = inputs[placeholders++];
    }
    if (placeholders != inputs.size())
      fail(n, "passes '" + path + "' " + std::to_string(inputs.size()) + " operands; it takes " +
                  std::to_string(placeholders));
    for (const Node* m : sub->graph().nodes())
      if (m->op() != Op::placeholder) inner.emit(m);
    return results;
  }

 private:
  // A subgraph written inline: its output's values go to `results`.
  ForwardEmitter(const GraphModule& gm, const ExtraCalls& extra, ForwardState& state, std::string prefix,
                 std::vector<CppValue>* results)
      : gm_(gm),
        extra_(extra),
        state_(state),
        out_(state.out),
        local_names_(state.local_names),
        member_names_(state.member_names),
        weight_index_(state.weight_index),
        overloads_(state.overloads),
        prefix_(std::move(prefix)),
        results_(results) {}

  // ---- values ----
  CppValue sequence(const std::vector<Argument>& items) {
    std::vector<std::string> parts;
    bool ints = true, tensors = true;
    for (const auto& item : items) {
      CppValue v = value(item);
      ints = ints && v.kind == Kind::integer;
      tensors = tensors && v.kind == Kind::tensor;
      parts.push_back(v.expr);
    }
    if (items.empty() || ints) return {cpp_int_list(parts), Kind::int_list, {}};
    if (tensors) return {"{" + join(parts) + "}", Kind::tensor_list, {}};
    fail(current_, "has a list or tuple mixing kinds; only lists of ints or of tensors are supported");
  }

  void declare(const Node* n, CppValue v) {
    if (v.kind == Kind::none) {
      if (!v.expr.empty()) line(v.expr + ";");
      values_[n] = CppValue{"", Kind::none, {}};
      return;
    }
    std::string name = local_names_.make(n->name());
    line(cpp_type(v.kind) + " " + name + " = " + v.expr + ";");
    values_[n] = CppValue{name, v.kind, v.items};
  }

  void emit(const Node* n) {
    current_ = n;
    switch (n->op()) {
      case Op::placeholder: {
        std::string name = local_names_.make(n->name());
        Kind k = Kind::tensor;
        if (!n->args().empty() && !n->args()[0].is_none()) {
          k = value(n->args()[0]).kind;
          if (k != Kind::integer && k != Kind::real && k != Kind::boolean)
            fail(n, "has a default value that is not a number; export_cpp takes tensors and numbers");
        }
        out_.params.emplace_back(name, k);
        out_.param_names.push_back(n->name());
        values_[n] = CppValue{name, k, {}};
        return;
      }
      case Op::get_attr:
        if (dynamic_cast<const GraphModule*>(gm_.get_submodule(n->target().str()))) {
          subgraphs_.insert(n);  // written where cond or while_loop reads it
          values_[n] = CppValue{"", Kind::none, {}};
          return;
        }
        if (!gm_.has_attribute(n->target().str())) fail(n, "names no tensor of the GraphModule");
        declare(n, CppValue{weight(n->target().str()), Kind::tensor, {}});
        return;
      case Op::call_module: {
        torch::nn::Module* m = gm_.get_submodule(n->target().str());
        if (!m) fail(n, "names no submodule of the GraphModule");
        declare(n, emit_module_call(*this, n, *m));
        return;
      }
      case Op::call_function:
        if (is_control_flow(*n)) {
          values_[n] = emit_control_flow(*this, n);  // it declares its own variable
          return;
        }
        declare(n, call_function(n));
        return;
      case Op::call_method:
        declare(n, call_method(n));
        return;
      case Op::output:
        output(n);
        return;
    }
  }

  void output(const Node* n) {
    if (n->args().empty()) fail(n, "has no value");
    const Argument& result = n->args()[0];
    if (results_) {
      const auto* items = std::get_if<Tuple>(&result.storage());
      const auto* list = std::get_if<List>(&result.storage());
      if (items || list)
        for (const Argument& item : items ? items->items : list->items) results_->push_back(value(item));
      else
        results_->push_back(value(result));
      return;
    }
    CppValue v = value(result);
    if (v.kind == Kind::tensor) {
      out_.return_type = "at::Tensor";
      line("return " + v.expr + ";");
      return;
    }
    out_.return_type = "c10::IValue";
    if (const auto* t = std::get_if<Tuple>(&result.storage())) {
      std::vector<std::string> parts;
      for (const auto& item : t->items) parts.push_back(value(item).expr);
      line("return c10::ivalue::Tuple::create({" + join(parts) + "});");
    } else if (v.kind == Kind::tensor_list && result.is_node()) {
      line("return c10::List<at::Tensor>(" + v.expr + ");");
    } else if (v.kind == Kind::tensor_list) {
      line("return c10::List<at::Tensor>(std::vector<at::Tensor>" + v.expr + ");");
    } else if (v.kind == Kind::tuple || is_number(v.kind) || v.kind == Kind::int_list) {
      line("return c10::IValue(" + v.expr + ");");
    } else {
      fail(n, "returns a " + kind_name(v.kind) + ", which export_cpp cannot return");
    }
  }

  // ---- call_function ----
  CppValue call_function(const Node* n) {
    const std::string& t = n->target().str();
    if (t.rfind("operator.", 0) == 0) return operator_call(n, t.substr(9));
    if (t == "builtins.getattr") return getattr(n);
    if (t == "torch._assert") return assert_call(n);
    if (t.rfind("torch.nn.functional.", 0) == 0) return emit_functional(*this, n, t.substr(20));
    if (const OpsName* ops = n->target().ops_name(); ops && ops->ns == "aten")
      return aten(n, ops->op, n->args(), n->kwargs(), /*method=*/false,
                  std::string(ops->dispatcher_overload()));
    if (t.rfind("torch.", 0) == 0 && t.find('.', 6) == std::string::npos)
      return aten(n, t.substr(6), n->args(), n->kwargs(), false);
    if (extra_)
      if (std::optional<CppValue> v = extra_(*this, n)) return std::move(*v);
    fail(n,
         "calls a function export_cpp has no C++ spelling for (supported: operator.*, torch.*, "
         "torch.nn.functional.*, torch.ops.aten.*, getattr)");
  }

  std::vector<CppValue> positional(const Node* n, size_t count) {
    if (n->args().size() != count || !n->kwargs().empty())
      fail(n, "takes " + std::to_string(count) + " positional argument(s) here");
    std::vector<CppValue> out;
    for (const auto& a : n->args()) out.push_back(value(a));
    return out;
  }

  CppValue operator_call(const Node* n, const std::string& op) {
    static const std::unordered_map<std::string, std::string> binary = {
        {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"truediv", "/"}, {"eq", "=="}, {"ne", "!="}, {"lt", "<"},
        {"le", "<="}, {"gt", ">"},  {"ge", ">="}, {"and_", "&"},    {"or_", "|"}, {"xor", "^"}};
    if (op == "getitem") return getitem(n);
    if (op == "neg" || op == "pos" || op == "invert" || op == "not_") {
      auto a = positional(n, 1);
      if (op == "not_") return {"!" + a[0].expr, Kind::boolean, {}};
      if (a[0].kind != Kind::tensor && !is_number(a[0].kind)) fail(n, "applies to a " + kind_name(a[0].kind));
      std::string sym = op == "neg" ? "-" : op == "pos" ? "+" : "~";
      return {"(" + sym + a[0].expr + ")", a[0].kind, {}};
    }
    auto ab = positional(n, 2);
    const CppValue &a = ab[0], &b = ab[1];
    const bool tensor = a.kind == Kind::tensor || b.kind == Kind::tensor;
    if (!tensor && !(is_number(a.kind) && is_number(b.kind)))
      fail(n, "applies to a " + kind_name(a.kind) + " and a " + kind_name(b.kind) +
                  "; export_cpp supports tensors and numbers");
    const bool real = a.kind == Kind::real || b.kind == Kind::real;
    const Kind number = real ? Kind::real : Kind::integer;
    if (op == "matmul") {
      if (!tensor) fail(n, "multiplies numbers as matrices");
      return {"at::matmul(" + a.expr + ", " + b.expr + ")", Kind::tensor, {}};
    }
    if (op == "floordiv" || op == "mod" || op == "pow") {
      if (tensor) {
        if (a.kind != Kind::tensor) fail(n, "needs a tensor on the left in C++");
        if (op == "floordiv") return {"at::div(" + a.expr + ", " + b.expr + ", \"floor\")", Kind::tensor, {}};
        return {std::string(op == "mod" ? "at::remainder(" : "at::pow(") + a.expr + ", " + b.expr + ")",
                Kind::tensor,
                {}};
      }
      // Python's floor semantics on numbers (helpers of forward.cpp).
      if (op == "pow") return {"std::pow(" + a.expr + ", " + b.expr + ")", Kind::real, {}};
      return {std::string(op == "floordiv" ? "py_floordiv(" : "py_mod(") + a.expr + ", " + b.expr + ")",
              number,
              {}};
    }
    auto sym = binary.find(op);
    if (sym == binary.end()) fail(n, "is operator." + op + ", which export_cpp does not translate");
    if (op == "truediv" && !tensor)
      return {"(static_cast<double>(" + a.expr + ") / " + b.expr + ")", Kind::real, {}};
    Kind k = tensor ? Kind::tensor : number;
    if (!tensor && (op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge"))
      k = Kind::boolean;
    if (!tensor && (op == "and_" || op == "or_" || op == "xor"))
      k = a.kind == Kind::boolean && b.kind == Kind::boolean ? Kind::boolean : Kind::integer;
    return {"(" + a.expr + " " + sym->second + " " + b.expr + ")", k, {}};
  }

  // A constant index into a sequence of `size` items (or of unknown size: -1), Python-normalized.
  std::string index_into(const Node* n, const std::string& seq, const Argument& index) {
    CppValue i = value(index);
    if (i.kind != Kind::integer) fail(n, "indexes a sequence with a " + kind_name(i.kind));
    if (const auto* c = std::get_if<int64_t>(&index.storage()); c && *c < 0)
      return seq + "[" + seq + ".size() - " + std::to_string(-*c) + "]";
    return seq + "[" + i.expr + "]";
  }

  CppValue getitem(const Node* n) {
    if (n->args().size() != 2) fail(n, "takes 2 arguments");
    CppValue seq = value(n->args()[0]);
    const Argument& index = n->args()[1];
    switch (seq.kind) {
      case Kind::int_list:
      case Kind::tensor_list:
        if (const auto* s = std::get_if<Slice>(&index.storage())) {
          auto part = [&](const Argument& p) {
            if (p.is_none()) return std::string("c10::nullopt");
            CppValue v = value(p);
            if (v.kind != Kind::integer) fail(n, "slices with a " + kind_name(v.kind));
            return v.expr;
          };
          if (!s->parts[2].is_none()) fail(n, "slices a list with a step");
          return {"py_slice(" + seq.expr + ", " + part(s->parts[0]) + ", " + part(s->parts[1]) + ")",
                  seq.kind,
                  {}};
        }
        return {
            index_into(n, seq.expr, index), seq.kind == Kind::int_list ? Kind::integer : Kind::tensor, {}};
      case Kind::tuple: {
        const auto* c = std::get_if<int64_t>(&index.storage());
        if (!c) fail(n, "indexes a tuple with something other than a constant int");
        int64_t size = static_cast<int64_t>(seq.items.size());
        int64_t i = *c < 0 ? *c + size : *c;
        if (i < 0 || i >= size)
          fail(n, "indexes a tuple of " + std::to_string(size) + " items at " + std::to_string(*c));
        Kind k = seq.items[static_cast<size_t>(i)];
        return {"std::get<" + std::to_string(i) + ">(" + seq.expr + ")", k, {}};
      }
      case Kind::tensor:
        return tensor_index(n, seq, index);
      default:
        fail(n, "indexes a " + kind_name(seq.kind));
    }
  }

  // x[i], x[a:b], x[:, None], x[..., 0]: Tensor::index with torch::indexing.
  CppValue tensor_index(const Node* n, const CppValue& x, const Argument& index) {
    if (const auto* c = std::get_if<int64_t>(&index.storage()))
      return {x.expr + ".select(0, " + std::to_string(*c) + ")", Kind::tensor, {}};
    std::vector<Argument> items;
    if (const auto* t = std::get_if<Tuple>(&index.storage()))
      items = t->items;
    else
      items = {index};
    std::vector<std::string> parts;
    for (const auto& item : items) {
      if (item.is_none()) {
        parts.push_back("at::indexing::None");
      } else if (item.is<EllipsisType>()) {
        parts.push_back("at::indexing::Ellipsis");
      } else if (const auto* s = std::get_if<Slice>(&item.storage())) {
        std::vector<std::string> sp;
        for (const auto& p : s->parts) {
          if (p.is_none()) {
            sp.push_back("c10::nullopt");
            continue;
          }
          CppValue v = value(p);
          if (v.kind != Kind::integer) fail(n, "slices a tensor with a " + kind_name(v.kind));
          sp.push_back(v.expr);
        }
        while (!sp.empty() && sp.back() == "c10::nullopt") sp.pop_back();
        parts.push_back("at::indexing::Slice(" + join(sp) + ")");
      } else {
        CppValue v = value(item);
        if (v.kind != Kind::integer && v.kind != Kind::tensor && v.kind != Kind::boolean)
          fail(n, "indexes a tensor with a " + kind_name(v.kind));
        parts.push_back(v.expr);
      }
    }
    return {x.expr + ".index({" + join(parts) + "})", Kind::tensor, {}};
  }

  CppValue getattr(const Node* n) {
    if (n->args().size() != 2 || !n->args()[1].is<std::string>())
      fail(n, "takes an object and an attribute name");
    CppValue x = value(n->args()[0]);
    const std::string& attr = n->args()[1].get<std::string>();
    if (x.kind != Kind::tensor) fail(n, "reads an attribute of a " + kind_name(x.kind));
    if (attr == "shape") return {x.expr + ".sizes().vec()", Kind::int_list, {}};
    if (attr == "ndim") return {x.expr + ".dim()", Kind::integer, {}};
    if (attr == "dtype") return {x.expr + ".scalar_type()", Kind::dtype, {}};
    if (attr == "device") return {x.expr + ".device()", Kind::device, {}};
    if (attr == "mT") return {x.expr + ".mT()", Kind::tensor, {}};
    fail(n, "reads Tensor." + attr + ", which export_cpp does not translate");
  }

  CppValue assert_call(const Node* n) {
    if (n->num_users() != 0) fail(n, "has users; torch._assert's result is None");
    if (n->args().empty() || n->args().size() > 2) fail(n, "takes a condition and a message");
    CppValue cond = value(n->args()[0]);
    std::string c = cond.kind == Kind::tensor ? cond.expr + ".item<bool>()" : cond.expr;
    std::string msg = n->args().size() > 1 ? value(n->args()[1]).expr : "\"assertion failed\"";
    return {"TORCH_CHECK(" + c + ", " + msg + ")", Kind::none, {}};
  }

  // ---- call_method ----
  CppValue call_method(const Node* n) {
    const std::string& m = n->target().str();
    if (n->args().empty()) fail(n, "has no self argument");
    CppValue self = value(n->args()[0]);
    if (self.kind != Kind::tensor) fail(n, "calls a method of a " + kind_name(self.kind));
    const size_t nargs = n->args().size();
    if (m == "size" && nargs == 1 && n->kwargs().empty())
      return {self.expr + ".sizes().vec()", Kind::int_list, {}};
    if (m == "size" && nargs == 2)
      return {self.expr + ".size(" + value(n->args()[1]).expr + ")", Kind::integer, {}};
    if ((m == "dim" || m == "ndimension") && nargs == 1) return {self.expr + ".dim()", Kind::integer, {}};
    if ((m == "numel" || m == "nelement") && nargs == 1) return {self.expr + ".numel()", Kind::integer, {}};
    static const std::unordered_map<std::string, std::string> casts = {
        {"float", "at::kFloat"}, {"double", "at::kDouble"}, {"half", "at::kHalf"},        {"int", "at::kInt"},
        {"long", "at::kLong"},   {"bool", "at::kBool"},     {"bfloat16", "at::kBFloat16"}};
    if (auto c = casts.find(m); c != casts.end() && nargs == 1)
      return {self.expr + ".to(" + c->second + ")", Kind::tensor, {}};
    return aten(n, m, n->args(), n->kwargs(), /*method=*/true);
  }

  // ---- ATen by schema ----
  static bool accepts(const c10::TypePtr& type, const CppValue& v, bool is_list_item = false) {
    using K = c10::TypeKind;
    if (auto opt = type->cast<c10::OptionalType>())
      return v.kind == Kind::none || accepts(opt->getElementType(), v);
    switch (type->kind()) {
      case K::TensorType:
        return v.kind == Kind::tensor;
      case K::IntType:
      case K::SymIntType:
        return v.kind == Kind::integer || (!is_list_item && v.kind == Kind::boolean);
      case K::FloatType:
        return v.kind == Kind::real || v.kind == Kind::integer;
      case K::BoolType:
        return v.kind == Kind::boolean;
      case K::NumberType:
        return is_number(v.kind);
      case K::StringType:
        return v.kind == Kind::str;
      case K::ScalarTypeType:
        return v.kind == Kind::dtype;
      case K::DeviceObjType:
        return v.kind == Kind::device;
      case K::LayoutType:
      case K::MemoryFormatType:
        return v.kind == Kind::integer && v.expr.rfind("at::", 0) == 0;
      case K::ListType: {
        auto elem = type->castRaw<c10::ListType>()->getElementType();
        if (elem->kind() == K::IntType || elem->kind() == K::SymIntType)
          return v.kind == Kind::int_list ||
                 v.kind == Kind::integer;  // one int: a 1-item list (int[N] repeats it)
        if (elem->kind() == K::TensorType) return v.kind == Kind::tensor_list;
        return false;
      }
      default:
        return false;
    }
  }

  static std::optional<Kind> return_kind(const c10::TypePtr& type) {
    using K = c10::TypeKind;
    switch (type->kind()) {
      case K::TensorType:
        return Kind::tensor;
      case K::IntType:
      case K::SymIntType:
        return Kind::integer;
      case K::FloatType:
        return Kind::real;
      case K::BoolType:
        return Kind::boolean;
      case K::ListType: {
        auto elem = type->castRaw<c10::ListType>()->getElementType()->kind();
        if (elem == K::TensorType) return Kind::tensor_list;
        if (elem == K::IntType || elem == K::SymIntType) return Kind::int_list;
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  std::string render_default(const c10::Argument& arg) {
    const c10::IValue& d = *arg.default_value();
    const auto& type = arg.real_type();
    if (d.isNone()) return "c10::nullopt";
    auto elem = type->kind() == c10::TypeKind::OptionalType
                    ? type->castRaw<c10::OptionalType>()->getElementType()
                    : type;
    switch (elem->kind()) {
      case c10::TypeKind::ScalarTypeType:
        return cpp_dtype(static_cast<c10::ScalarType>(d.toInt()));
      case c10::TypeKind::MemoryFormatType:
        return cpp_memory_format(static_cast<c10::MemoryFormat>(d.toInt()));
      case c10::TypeKind::LayoutType:
        return "at::kStrided";
      default:
        break;
    }
    if (d.isBool()) return d.toBool() ? "true" : "false";
    if (d.isInt()) return std::to_string(d.toInt());
    if (d.isDouble()) return cpp_double(d.toDouble());
    if (d.isString()) return cpp_string(d.toStringRef());
    if (d.isIntList()) {
      std::vector<std::string> parts;
      for (int64_t i : d.toIntVector()) parts.push_back(std::to_string(i));
      return "at::IntArrayRef{" + join(parts) + "}";
    }
    throw Error("export_cpp: cannot spell the default of " + arg.name() + " in C++");
  }

  // torch.<name>(...) as at::<name>(...), self.<name>(...) as self.<name>(...):
  // the first ATen overload whose schema the arguments fit, in schema order.
  CppValue aten(const Node* n, const std::string& name, const Args& args, const Kwargs& kwargs, bool method,
                const std::string& overload = "") {
    std::vector<CppValue> pos;
    for (const auto& a : args) pos.push_back(value(a));
    std::vector<std::pair<std::string, CppValue>> kw;
    for (const auto& [k, a] : kwargs) kw.emplace_back(k, value(a));
    auto [cached, fresh] = overloads_.try_emplace(name);
    if (fresh) cached->second = operator_overloads("aten::" + name);
    const std::vector<c10::OperatorHandle>& ops = cached->second;
    if (ops.empty()) fail(n, "calls '" + name + "', which is no ATen operator export_cpp could call");
    for (const auto& op : ops) {
      const c10::FunctionSchema& s = op.schema();
      if (!overload.empty() && s.overload_name() != overload) continue;
      if (s.overload_name() == "out" || s.overload_name().find("_out") != std::string::npos ||
          s.overload_name().find("Dimname") != std::string::npos || s.is_mutable() != (name.back() == '_'))
        continue;
      if (auto call = bind_schema(s, pos, kw)) {
        std::vector<Kind> returns;
        bool ok = true;
        for (const auto& r : s.returns()) {
          auto k = return_kind(r.real_type());
          ok = ok && k.has_value();
          if (k) returns.push_back(*k);
        }
        if (!ok) continue;
        std::vector<std::string> rendered = *call;
        std::string expr;
        if (method || method_only(name, s.overload_name())) {
          if (rendered.empty()) continue;
          std::string self = rendered.front();
          rendered.erase(rendered.begin());
          expr = self + "." + name + "(" + join(rendered) + ")";
        } else {
          expr = "at::" + name + "(" + join(rendered) + ")";
        }
        if (returns.empty()) return {expr, Kind::none, {}};
        if (returns.size() == 1) return {expr, returns[0], {}};
        return {expr, Kind::tuple, returns};
      }
    }
    // Python wraps a number given for a Tensor parameter as a tensor
    // (torch.export's `add.Tensor(x, 1)`); C++ passes it to the overload that
    // takes a Scalar there (add.Scalar), which computes the same.
    bool number = false;
    for (const auto& p : pos) number = number || is_number(p.kind);
    for (const auto& [k, v] : kw) number = number || is_number(v.kind);
    if (!overload.empty() && number) return aten(n, name, args, kwargs, method);
    std::vector<std::string> got;
    for (const auto& p : pos) got.push_back(kind_name(p.kind));
    for (const auto& [k, v] : kw) got.push_back(k + "=" + kind_name(v.kind));
    fail(n, "fits no ATen schema of '" + name + "' with arguments (" + join(got) + ")");
  }

  // The C++ arguments of a call of schema `s`, or nullopt when they do not fit.
  std::optional<std::vector<std::string>> bind_schema(
      const c10::FunctionSchema& s, const std::vector<CppValue>& pos,
      const std::vector<std::pair<std::string, CppValue>>& kw) {
    const auto& params = s.arguments();
    std::vector<std::optional<std::string>> bound(params.size());
    size_t positional_params = 0;
    while (positional_params < params.size() && !params[positional_params].kwarg_only()) ++positional_params;
    size_t i = 0;
    for (size_t p = 0; p < pos.size(); ++p, ++i) {
      if (i >= positional_params) return std::nullopt;
      const auto& type = params[i].real_type();
      auto list = type->cast<c10::ListType>();
      const bool int_list = list && (list->getElementType()->kind() == c10::TypeKind::IntType ||
                                     list->getElementType()->kind() == c10::TypeKind::SymIntType);
      // x.view(2, 3): Python packs the trailing ints into the list parameter.
      if (int_list && pos[p].kind == Kind::integer && p + 1 < pos.size()) {
        std::vector<std::string> items;
        for (; p < pos.size(); ++p) {
          if (!accepts(list->getElementType(), pos[p], /*is_list_item=*/true)) return std::nullopt;
          items.push_back(pos[p].expr);
        }
        bound[i] = cpp_int_list(items);
        ++i;
        break;
      }
      if (!accepts(type, pos[p])) return std::nullopt;
      bound[i] = int_list && pos[p].kind == Kind::integer ? cpp_int_list({pos[p].expr}) : pos[p].expr;
    }
    for (const auto& [k, v] : kw) {
      size_t j = 0;
      const std::string key = k == "input" ? "self" : k;  // Python's name for ATen's self
      while (j < params.size() && params[j].name() != key) ++j;
      if (j == params.size() || bound[j] || !accepts(params[j].real_type(), v)) return std::nullopt;
      auto list = params[j].real_type()->cast<c10::ListType>();
      bound[j] = list && v.kind == Kind::integer ? cpp_int_list({v.expr}) : v.expr;
    }
    size_t last = 0;
    size_t options = 0;  // dtype, layout, device and pin_memory: TensorOptions in C++
    bool options_bound = false;
    for (size_t j = 0; j < params.size(); ++j) {
      const std::string& name = params[j].name();
      if (name == "dtype" || name == "layout" || name == "device" || name == "pin_memory") {
        ++options;
        options_bound = options_bound || bound[j].has_value();
      }
      if (bound[j])
        last = j + 1;
      else if (!params[j].default_value())
        return std::nullopt;
    }
    // The C++ overload that takes them one by one (at::empty(size, dtype,
    // layout, device, pin_memory, memory_format)) has no defaults: it
    // takes every argument.
    if (options == 4 && options_bound) last = params.size();
    std::vector<std::string> out;
    for (size_t j = 0; j < last; ++j) out.push_back(bound[j] ? *bound[j] : render_default(params[j]));
    return out;
  }

  const GraphModule& gm_;
  const ExtraCalls& extra_;
  ForwardState& state_;
  CppForward& out_;
  CppNames &local_names_, &member_names_;
  std::unordered_map<std::string, size_t>& weight_index_;
  std::unordered_map<std::string, std::vector<c10::OperatorHandle>>& overloads_;
  const std::string prefix_;              // "true_graph_0." in a subgraph, else ""
  std::vector<CppValue>* const results_;  // a subgraph's outputs, else nullptr
  std::unordered_map<const Node*, CppValue> values_;
  std::unordered_set<const Node*> subgraphs_;  // get_attr nodes of GraphModules
  const Node* current_ = nullptr;
};

}  // namespace

void Emitter::fail(const Node* n, const std::string& why) {
  std::string where =
      n ? "node '" + n->name() + "' (" + std::string(op_name(n->op())) + " " + n->target().str() + ")"
        : "the graph";
  throw Error("export_cpp: " + where + " " + why);
}

CppForward emit_forward(const GraphModule& gm, const ExtraCalls& extra) {
  ForwardState state;
  ForwardEmitter(gm, extra, state).run();
  return std::move(state.out);
}

}  // namespace fx::codegen
