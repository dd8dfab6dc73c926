// torch.export's enums and c10's (schema_enums.h).
#include "schema_enums.h"

#include <utility>

namespace fx::detail {

namespace {

using S = c10::ScalarType;
constexpr std::pair<int64_t, S> kScalarTypes[] = {
    {1, S::Byte},
    {2, S::Char},
    {3, S::Short},
    {4, S::Int},
    {5, S::Long},
    {6, S::Half},
    {7, S::Float},
    {8, S::Double},
    {9, S::ComplexHalf},
    {10, S::ComplexFloat},
    {11, S::ComplexDouble},
    {12, S::Bool},
    {13, S::BFloat16},
    {28, S::UInt16},
    {29, S::Float8_e4m3fn},
    {30, S::Float8_e5m2},
    {31, S::Float8_e4m3fnuz},
    {32, S::Float8_e5m2fnuz},
    {33, S::Float8_e8m0fnu},
    {34, S::UInt32},
    {35, S::UInt64},
};

using M = c10::MemoryFormat;
constexpr std::pair<int64_t, M> kMemoryFormats[] = {
    {1, M::Contiguous}, {2, M::ChannelsLast}, {3, M::ChannelsLast3d}, {4, M::Preserve}};

template <class T, size_t N>
std::optional<T> by_number(const std::pair<int64_t, T> (&table)[N], int64_t number) {
  for (const auto& [n, v] : table)
    if (n == number) return v;
  return std::nullopt;
}

template <class T, size_t N>
std::optional<int64_t> by_value(const std::pair<int64_t, T> (&table)[N], T value) {
  for (const auto& [n, v] : table)
    if (v == value) return n;
  return std::nullopt;
}

}  // namespace

std::optional<c10::ScalarType> scalar_type_from_schema(int64_t number) {
  return by_number(kScalarTypes, number);
}
std::optional<int64_t> schema_scalar_type(c10::ScalarType t) { return by_value(kScalarTypes, t); }
std::optional<c10::MemoryFormat> memory_format_from_schema(int64_t number) {
  return by_number(kMemoryFormats, number);
}
std::optional<int64_t> schema_memory_format(c10::MemoryFormat f) { return by_value(kMemoryFormats, f); }

}  // namespace fx::detail
