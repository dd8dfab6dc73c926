#pragma once
// `torch.ops.<namespace>.<op>[.<overload>]` taken apart: the one parser of
// such names, for Target's entries and for readers that must check a name
// before it becomes a Target (interned for the life of the process).

#include <fx/target.h>

#include <optional>
#include <string>
#include <string_view>

namespace fx::detail {

// The parts of `name`, or nothing when it is not such a name.
inline std::optional<OpsName> parse_ops_name(std::string_view name) {
  constexpr std::string_view kPrefix = "torch.ops.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const size_t ns_end = name.find('.', kPrefix.size());
  if (ns_end == std::string_view::npos) return std::nullopt;
  const std::string_view op = name.substr(ns_end + 1);
  const size_t dot = op.find('.');
  return OpsName{std::string(name.substr(kPrefix.size(), ns_end - kPrefix.size())),
                 std::string(op.substr(0, dot)),
                 dot == std::string_view::npos ? std::string() : std::string(op.substr(dot + 1))};
}

}  // namespace fx::detail
