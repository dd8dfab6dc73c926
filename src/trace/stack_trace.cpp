#include "stack_trace.h"

#include <c10/util/Backtrace.h>

#include <array>
#include <sstream>
#include <string_view>

namespace fx::detail {

namespace {
// c10::get_backtrace writes `frame #N: <function> + 0x<offset> (0x<pc> in <binary>)`.
bool is_library_frame(std::string_view fn) {
  constexpr std::array<std::string_view, 9> prefixes = {
      "fx::", "c10::", "at::", "torch::", "std::", "__libc", "_start", "<unknown function>", "__gnu_cxx::"};
  for (auto p : prefixes)
    if (fn.substr(0, p.size()) == p) return true;
  return fn.find("fx::Value::") != std::string_view::npos;  // template instances printed with a return type
}
}  // namespace

std::string user_stack_trace() {
  std::istringstream frames(c10::get_backtrace(/*frames_to_skip=*/1));
  std::string line, out;
  while (std::getline(frames, line)) {
    size_t colon = line.find(": ");
    if (line.rfind("frame #", 0) != 0 || colon == std::string::npos) continue;
    std::string_view rest = std::string_view(line).substr(colon + 2);
    size_t plus = rest.rfind(" + 0x");
    std::string_view fn = rest.substr(0, plus);
    if (is_library_frame(fn)) continue;
    size_t in = rest.rfind(" in ");
    std::string_view binary = in == std::string_view::npos ? "" : rest.substr(in + 4);
    if (!binary.empty() && binary.back() == ')') binary.remove_suffix(1);
    out += "  ";
    out += fn;
    if (!binary.empty()) out += " (" + std::string(binary) + ")";
    out += '\n';
  }
  return out;
}

}  // namespace fx::detail
