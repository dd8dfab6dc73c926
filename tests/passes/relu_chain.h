#pragma once
// The large graph of the passes' size checks: x, then n relu calls that
// alternate torch.nn.functional.relu and torch.relu, each on the one before.
#include <fx/fx.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace fxcpp_tests {

inline std::unique_ptr<fx::GraphModule> relu_chain(int64_t n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* v = g->placeholder("x");
  for (int64_t i = 0; i < n; ++i)
    v = g->call_function(i % 2 ? "torch.relu" : "torch.nn.functional.relu", {v});
  g->output(v);
  return std::make_unique<fx::GraphModule>(std::map<std::string, fx::GraphModule::Attr>{}, std::move(g));
}

}  // namespace fxcpp_tests
