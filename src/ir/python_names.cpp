#include "python_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

namespace fx::detail {

namespace {
// clang-format off
// keyword.kwlist of Python 3.11.
constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",   "True",    "and",      "as",       "assert", "async",  "await", "break",
    "class", "continue", "def",   "del",      "elif",     "else",   "except", "finally", "for",
    "from",  "global", "if",      "import",   "in",       "is",     "lambda", "nonlocal", "not",
    "or",    "pass",   "raise",   "return",   "try",      "while",  "with",   "yield"};

// sorted(builtins.__dict__) of Python 3.11 as torch.fx sees it (site's
// exit/quit/help/... included): the same 157 names under Debian's python3
// and under the venv's Python 3.11 with torch 2.14.
constexpr std::array<std::string_view, 157> kBuiltins = {
    "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup",
    "BlockingIOError", "BrokenPipeError", "BufferError", "BytesWarning", "ChildProcessError",
    "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
    "DeprecationWarning", "EOFError", "Ellipsis", "EncodingWarning", "EnvironmentError", "Exception",
    "ExceptionGroup", "False", "FileExistsError", "FileNotFoundError", "FloatingPointError",
    "FutureWarning", "GeneratorExit", "IOError", "ImportError", "ImportWarning", "IndentationError",
    "IndexError", "InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt",
    "LookupError", "MemoryError", "ModuleNotFoundError", "NameError", "None", "NotADirectoryError",
    "NotImplemented", "NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning",
    "PermissionError", "ProcessLookupError", "RecursionError", "ReferenceError", "ResourceWarning",
    "RuntimeError", "RuntimeWarning", "StopAsyncIteration", "StopIteration", "SyntaxError",
    "SyntaxWarning", "SystemError", "SystemExit", "TabError", "TimeoutError", "True", "TypeError",
    "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError", "Warning",
    "ZeroDivisionError", "__build_class__", "__debug__", "__doc__", "__import__", "__loader__",
    "__name__", "__package__", "__spec__", "abs", "aiter", "all", "anext", "any", "ascii", "bin",
    "bool", "breakpoint", "bytearray", "bytes", "callable", "chr", "classmethod", "compile",
    "complex", "copyright", "credits", "delattr", "dict", "dir", "divmod", "enumerate", "eval",
    "exec", "exit", "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr",
    "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len",
    "license", "list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct",
    "open", "ord", "pow", "print", "property", "quit", "range", "repr", "reversed", "round", "set",
    "setattr", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "vars",
    "zip"};
// clang-format on

constexpr bool has_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
template <size_t N>
constexpr bool none_has_digit(const std::array<std::string_view, N>& a) {
  return std::none_of(a.begin(), a.end(), has_digit);
}
// So a name with a digit in it (`add_1`, most generated names) is neither,
// without a search.
static_assert(none_has_digit(kKeywords) && none_has_digit(kBuiltins));

// Bit n of masks[c] is set when a name of the table has length n (31: 31 or
// more) and starts with c (modulo 128). Most names fail this test, which
// saves the binary search: naming every node asks both tables.
using LengthMasks = std::array<uint32_t, 128>;
template <size_t N>
constexpr LengthMasks length_masks(const std::array<std::string_view, N>& a) {
  LengthMasks m{};
  for (auto s : a) m[static_cast<unsigned char>(s[0]) & 127] |= 1u << std::min<size_t>(s.size(), 31);
  return m;
}
constexpr LengthMasks kKeywordMasks = length_masks(kKeywords);
constexpr LengthMasks kBuiltinMasks = length_masks(kBuiltins);

template <size_t N>
bool sorted_contains(const std::array<std::string_view, N>& a, const LengthMasks& masks, std::string_view s) {
  if (s.empty() || !(masks[static_cast<unsigned char>(s[0]) & 127] >> std::min<size_t>(s.size(), 31) & 1))
    return false;
  return !has_digit(s) && std::binary_search(a.begin(), a.end(), s);
}
}  // namespace

bool is_python_keyword(std::string_view s) { return sorted_contains(kKeywords, kKeywordMasks, s); }
bool is_python_builtin(std::string_view s) { return sorted_contains(kBuiltins, kBuiltinMasks, s); }

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  // ASCII tests inline: std::isalpha is a call into the C locale per
  // character, and python_code asks this of every atom of every target.
  auto head = [](unsigned char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
  };
  if (!head(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return head(c) || (c >= '0' && c <= '9');
  });
}

std::string snake_case(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 4);
  bool prev_lower = false;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (prev_lower && std::isupper(c)) out.push_back('_');
    out.push_back(static_cast<char>(std::tolower(c)));
    prev_lower = std::islower(c) != 0;
  }
  return out;
}

}  // namespace fx::detail
