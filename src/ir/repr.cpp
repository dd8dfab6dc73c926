#include "repr.h"

#include <fx/error.h>
#include <fx/node.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace fx::detail {

namespace {
class PlainNames final : public NodeNamer {
 public:
  void append_name(std::string& out, const Node* n) const override { out += n->name(); }
};

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;
}  // namespace

const NodeNamer& plain_names() {
  static const PlainNames names;
  return names;
}

// Python's float repr: the shortest digits that round-trip, printed fixed
// when the decimal exponent is in [-4, 16), else as `d.ddde+XX`.
std::string repr_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  bool negative = sci[0] == '-';
  if (negative) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits.push_back(c);
  // to_chars wrote the exponent ("e+05", "e-07"): from_chars reads no '+'.
  std::string_view exponent = sci.substr(e + 1);
  if (!exponent.empty() && exponent[0] == '+') exponent.remove_prefix(1);
  int exp10 = 0;
  std::from_chars(exponent.data(), exponent.data() + exponent.size(), exp10);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // digits are d.ddd * 10^exp10 = 0.dddd * 10^decpt
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += exp;
  }
  return out;
}

namespace {
struct CodeRange {
  char32_t first, last;
};
constexpr CodeRange kNonPrintable[] = {
#include "unicode_nonprintable.inc"
};

bool is_printable(char32_t c) {
  const CodeRange* it = std::upper_bound(std::begin(kNonPrintable), std::end(kNonPrintable), c,
                                         [](char32_t v, const CodeRange& r) { return v < r.first; });
  return it == std::begin(kNonPrintable) || c > (it - 1)->last;
}

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 if invalid.
size_t decode_utf8(std::string_view s, size_t i, char32_t& c) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  c = len == 1 ? b : b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    auto cb = static_cast<unsigned char>(s[i + k]);
    if ((cb & 0xC0) != 0x80) return 0;
    c = (c << 6) | (cb & 0x3F);
  }
  return len;
}
}  // namespace

// Python's str repr: single quotes unless only those occur inside,
// backslash escapes for the quote, \\, \n, \r, \t and for every character
// str.isprintable() rejects (\xNN, \uNNNN, \UNNNNNNNN).
std::string repr_string(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char esc[16];
  for (size_t i = 0; i < s.size();) {
    char32_t c = 0;
    size_t len = decode_utf8(s, i, c);
    if (len == 0) {  // not UTF-8: escape the byte
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += esc;
      ++i;
      continue;
    }
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!is_printable(c)) {
      unsigned code = static_cast<unsigned>(c);
      std::snprintf(esc, sizeof esc, code < 0x100 ? "\\x%02x" : code < 0x10000 ? "\\u%04x" : "\\U%08x", code);
      out += esc;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  out += quote;
  return out;
}

size_t display_width(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

std::string repr_dtype(c10::ScalarType t) {
  using S = c10::ScalarType;
  switch (t) {
    case S::Byte:
      return "torch.uint8";
    case S::Char:
      return "torch.int8";
    case S::Short:
      return "torch.int16";
    case S::Int:
      return "torch.int32";
    case S::Long:
      return "torch.int64";
    case S::Half:
      return "torch.float16";
    case S::Float:
      return "torch.float32";
    case S::Double:
      return "torch.float64";
    case S::ComplexHalf:
      return "torch.complex32";
    case S::ComplexFloat:
      return "torch.complex64";
    case S::ComplexDouble:
      return "torch.complex128";
    case S::Bool:
      return "torch.bool";
    case S::QInt8:
      return "torch.qint8";
    case S::QUInt8:
      return "torch.quint8";
    case S::QInt32:
      return "torch.qint32";
    case S::BFloat16:
      return "torch.bfloat16";
    case S::QUInt4x2:
      return "torch.quint4x2";
    case S::QUInt2x4:
      return "torch.quint2x4";
    default:
      throw Error("dtype " + std::string(c10::toString(t)) + " has no Python name");
  }
}

std::string repr_layout(c10::Layout l) {
  using L = c10::Layout;
  switch (l) {
    case L::Strided:
      return "torch.strided";
    case L::Sparse:
      return "torch.sparse_coo";
    case L::SparseCsr:
      return "torch.sparse_csr";
    case L::SparseCsc:
      return "torch.sparse_csc";
    case L::SparseBsr:
      return "torch.sparse_bsr";
    case L::SparseBsc:
      return "torch.sparse_bsc";
    case L::Mkldnn:
      return "torch._mkldnn";
    default:
      throw Error("layout has no Python name");
  }
}

std::string repr_memory_format(c10::MemoryFormat m) {
  using M = c10::MemoryFormat;
  switch (m) {
    case M::Contiguous:
      return "torch.contiguous_format";
    case M::Preserve:
      return "torch.preserve_format";
    case M::ChannelsLast:
      return "torch.channels_last";
    case M::ChannelsLast3d:
      return "torch.channels_last_3d";
    default:
      throw Error("memory format has no Python name");
  }
}

std::string str_device(const c10::Device& d) { return d.str(); }

std::string repr_device(const c10::Device& d) {
  std::string type = c10::DeviceTypeName(d.type(), /*lower_case=*/true);
  std::string out = "device(type='" + type + "'";
  if (d.has_index()) out += ", index=" + std::to_string(d.index());
  return out + ")";
}

void append_repr(std::string& out, const Argument& a, const NodeNamer& names) {
  auto seq = [&](const std::vector<Argument>& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      append_repr(out, items[i], names);
    }
  };
  std::visit(Overloaded{
                 [&](const NoneType&) { out += "None"; },
                 [&](bool b) { out += b ? "True" : "False"; },
                 [&](int64_t i) {
                   char digits[24];
                   out.append(digits, std::to_chars(digits, digits + sizeof digits, i).ptr);
                 },
                 [&](double d) { out += repr_float(d); },
                 [&](const std::string& s) { out += repr_string(s); },
                 [&](Node* n) { names.append_name(out, n); },
                 [&](const Tuple& t) {
                   out += '(';
                   seq(t.items);
                   if (t.items.size() == 1) out += ',';
                   out += ')';
                 },
                 [&](const List& l) {
                   out += '[';
                   seq(l.items);
                   out += ']';
                 },
                 [&](const Dict& d) {
                   out += '{';
                   for (size_t i = 0; i < d.items.size(); ++i) {
                     if (i) out += ", ";
                     out += repr_string(d.items[i].first);
                     out += ": ";
                     append_repr(out, d.items[i].second, names);
                   }
                   out += '}';
                 },
                 [&](const Slice& s) {
                   out += "slice(";
                   seq(s.parts);
                   out += ')';
                 },
                 [&](const EllipsisType&) { out += "Ellipsis"; },
                 [&](c10::ScalarType t) { out += repr_dtype(t); },
                 [&](const c10::Device& d) { out += repr_device(d); },
                 [&](c10::Layout l) { out += repr_layout(l); },
                 [&](c10::MemoryFormat m) { out += repr_memory_format(m); },
                 [&](const Opaque& o) { out += o.repr; },
             },
             a.storage());
}

std::string repr(const Argument& a, const NodeNamer& names) {
  std::string out;
  append_repr(out, a, names);
  return out;
}

std::string str(const Argument& a, const NodeNamer& names) {
  if (a.is<std::string>()) return a.get<std::string>();
  if (a.is<c10::Device>()) return str_device(a.get<c10::Device>());
  return repr(a, names);
}

void append_format_arg(std::string& out, const Argument& a) {
  if (const auto* l = std::get_if<List>(&a.storage())) {
    out += '[';
    for (size_t i = 0; i < l->items.size(); ++i) {
      if (i) out += ", ";
      append_format_arg(out, l->items[i]);
    }
    out += ']';
  } else if (const auto* t = std::get_if<Tuple>(&a.storage())) {
    append_format_args(out, t->items);
  } else if (const auto* d = std::get_if<Dict>(&a.storage())) {
    out += '{';
    for (size_t i = 0; i < d->items.size(); ++i) {
      if (i) out += ", ";
      out += d->items[i].first;
      out += ": ";
      append_format_arg(out, d->items[i].second);
    }
    out += '}';
  } else if (Node* n = a.node()) {
    out += '%';
    out += n->name();
  } else {
    out += str(a, plain_names());
  }
}

void append_format_args(std::string& out, const Args& args) {
  out += '(';
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    append_format_arg(out, args[i]);
  }
  if (args.size() == 1) out += ',';
  out += ')';
}

void append_format_kwargs(std::string& out, const Kwargs& kwargs) {
  out += '{';
  for (size_t i = 0; i < kwargs.size(); ++i) {
    if (i) out += ", ";
    out += kwargs[i].first;
    out += ": ";
    append_format_arg(out, kwargs[i].second);
  }
  out += '}';
}

// A node being created has no name yet (every name a graph gives is non-empty).
std::string quoted(const Node* n) { return n->name().empty() ? "<new node>" : "'" + n->name() + "'"; }

std::string repr_int_tuple(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + (v.size() == 1 ? ",)" : ")");
}

// torch.nn's _addindent: every line but the first indented, except that
// blank (whitespace-only) lines become empty, as in torch 2.x.
std::string add_indent(const std::string& s, size_t spaces) {
  std::string out;
  out.reserve(s.size() + 16);
  size_t start = 0;
  for (bool first = true;; first = false) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string_view line(s.data() + start, end - start);
    if (!first) {
      out += '\n';
      if (line.find_first_not_of(" \t\r\v\f") == std::string_view::npos)
        line = {};
      else
        out.append(spaces, ' ');
    }
    out += line;
    if (end == s.size()) break;
    start = end + 1;
  }
  return out;
}

}  // namespace fx::detail
