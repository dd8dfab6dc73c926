// The small-slot tables behind the name tables (namespaces, lint).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "../../src/ir/index_set.h"

namespace {

TEST(IndexSet, FindsEveryStringByItsIndexAcrossGrowth) {
  std::vector<std::string> strings;
  auto key_of = [&](uint32_t i) { return std::string_view(strings[i]); };
  fx::detail::IndexSet set;
  EXPECT_FALSE(set.find("absent", key_of));  // empty table
  for (uint32_t i = 0; i < 5000; ++i) {
    std::string s = "name_" + std::to_string(i);
    // The new index need not name a string yet: it is stored, not read.
    auto [index, stored] = set.insert(s, i, key_of);
    ASSERT_TRUE(stored);
    EXPECT_EQ(index, i);
    strings.push_back(std::move(s));
  }
  EXPECT_EQ(set.size(), 5000u);
  for (uint32_t i = 0; i < 5000; ++i) EXPECT_EQ(set.find("name_" + std::to_string(i), key_of), i);
  EXPECT_FALSE(set.find("name_5000", key_of));
  auto [index, stored] = set.insert("name_42", 7777, key_of);
  EXPECT_FALSE(stored);
  EXPECT_EQ(index, 42u);
  EXPECT_EQ(set.size(), 5000u);
}

TEST(IndexSet, ReserveKeepsWhatIsThere) {
  std::vector<std::string> strings = {"a", "b", "c"};
  auto key_of = [&](uint32_t i) { return std::string_view(strings[i]); };
  fx::detail::IndexSet set;
  for (uint32_t i = 0; i < strings.size(); ++i) set.insert(strings[i], i, key_of);
  set.reserve(100000);
  for (uint32_t i = 0; i < strings.size(); ++i) EXPECT_EQ(set.find(strings[i], key_of), i);
  EXPECT_FALSE(set.find("", key_of));  // the empty string is a key like any other
  set.insert("", 3, key_of);
  strings.emplace_back();
  EXPECT_EQ(set.find("", key_of), 3u);
}

TEST(PointerIndexMap, AlignedPointersSpreadAndIndicesCanBeReset) {
  std::vector<long long> cells(3000);
  fx::detail::PointerIndexMap map;
  EXPECT_FALSE(map.find(&cells[0]));  // empty table
  for (uint32_t i = 0; i < cells.size(); ++i) map.set(&cells[i], i);
  for (uint32_t i = 0; i < cells.size(); ++i) EXPECT_EQ(map.find(&cells[i]), i);
  long long other = 0;
  EXPECT_FALSE(map.find(&other));
  map.set(&cells[5], 99);
  EXPECT_EQ(map.find(&cells[5]), 99u);
}

TEST(PointerIndexMap, InsertKeepsTheFirstIndex) {
  std::vector<int> cells(1000);
  fx::detail::PointerIndexMap map;
  for (uint32_t i = 0; i < cells.size(); ++i) EXPECT_TRUE(map.insert(&cells[i], i));  // grows on the way
  for (uint32_t i = 0; i < cells.size(); ++i) EXPECT_FALSE(map.insert(&cells[i], i + 7));
  for (uint32_t i = 0; i < cells.size(); ++i) EXPECT_EQ(map.find(&cells[i]), i);
  EXPECT_EQ(map.size(), cells.size());
}

}  // namespace
