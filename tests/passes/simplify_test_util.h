#pragma once
// Shared by the tests of the simplifying passes: the torch.fx oracle's JSON
// (FXCPP_PASSES_EXPECTED) and numerical comparison.
#include "oracle.h"

#include <fx/fx.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace simplify_test {

using passes_test::expected;

// torch.fx's answer for `model`/`key` (a failure when the oracle lacks it).

inline std::string oracle(const std::string& model, const std::string& key) {
  const auto& e = expected();
  if (!e.contains(model) || !e[model].contains(key)) {
    ADD_FAILURE() << "the oracle has no " << model << "/" << key;
    return "";
  }
  return e[model][key].get<std::string>();
}

inline bool oracle_flag(const std::string& model, const std::string& key) {
  return expected().at(model).at(key).get<bool>();
}

// Every tensor of two results (tensors, or tuples/lists of them) allclose.
inline void expect_allclose(const c10::IValue& a, const c10::IValue& b, double rtol = 1e-5,
                            double atol = 1e-6) {
  if (a.isTensor()) {
    ASSERT_TRUE(b.isTensor());
    EXPECT_TRUE(torch::allclose(a.toTensor(), b.toTensor(), rtol, atol))
        << "max abs difference " << (a.toTensor() - b.toTensor()).abs().max().item<double>();
    return;
  }
  if (a.isTuple() || a.isList()) {
    auto av = a.isTuple() ? a.toTupleRef().elements().vec() : a.toListRef().vec();
    auto bv = b.isTuple() ? b.toTupleRef().elements().vec() : b.toListRef().vec();
    ASSERT_EQ(av.size(), bv.size());
    for (size_t i = 0; i < av.size(); ++i) expect_allclose(av[i], bv[i], rtol, atol);
    return;
  }
  EXPECT_EQ(a, b);
}

}  // namespace simplify_test
