// The open-addressing table behind interned targets and name suffixes.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "../../src/ir/flat_map.h"

namespace {

TEST(FlatMap, KeepsEveryEntryAcrossGrowth) {
  fx::detail::FlatMap<std::string, int, fx::detail::StringViewHash> m;
  EXPECT_EQ(m.find(std::string_view("absent")), nullptr);  // empty table
  for (int i = 0; i < 5000; ++i) {
    auto [value, made] = m.try_emplace(std::string("name_") + std::to_string(i));
    ASSERT_TRUE(made);
    *value = i;
  }
  EXPECT_EQ(m.size(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    const int* v = m.find(std::string_view("name_" + std::to_string(i)));  // found by string_view
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, i);
  }
  EXPECT_EQ(m.find(std::string_view("name_5000")), nullptr);
  auto [again, made] = m.try_emplace(std::string("name_42"));
  EXPECT_FALSE(made);
  EXPECT_EQ(*again, 42);
  EXPECT_EQ(m.size(), 5000u);
}

TEST(FlatMap, PointerKeysSpreadOverThePowerOfTwoTable) {
  // Aligned pointers share their low bits; the table must still find each.
  std::vector<long long> cells(3000);
  fx::detail::FlatMap<const void*, size_t, std::hash<const void*>> m;
  for (size_t i = 0; i < cells.size(); ++i) *m.try_emplace(static_cast<const void*>(&cells[i])).first = i;
  for (size_t i = 0; i < cells.size(); ++i) {
    const size_t* v = m.find(static_cast<const void*>(&cells[i]));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, i);
  }
  long long other = 0;
  EXPECT_EQ(m.find(static_cast<const void*>(&other)), nullptr);
}

}  // namespace
