#pragma once
// A string-keyed hash map that a std::string_view finds without building a
// std::string (heterogeneous lookup).

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fx::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace fx::detail
