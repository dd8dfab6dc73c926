#pragma once
// torch.fx's answers for a passes test: the JSON its oracle script wrote
// (FXCPP_PASSES_EXPECTED), read once; null when the oracle did not run.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace passes_test {

inline const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(FXCPP_PASSES_EXPECTED);
    return in ? nlohmann::json::parse(in) : nlohmann::json();
  }();
  return j;
}

}  // namespace passes_test

#define SKIP_WITHOUT_ORACLE()                 \
  if (::passes_test::expected().is_null()) \
  GTEST_SKIP() << "the torch.fx oracle did not run (" << FXCPP_PASSES_EXPECTED << ")"
