// The memory of destroyed graphs' node blocks is kept for the next graphs
// (src/ir/block_memory.h): a new graph reuses it, and what is kept is bounded.
#include <fx/graph.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../../src/ir/block_memory.h"

namespace {

std::unique_ptr<fx::Graph> chain(int n) {
  auto g = std::make_unique<fx::Graph>();
  fx::Node* prev = g->placeholder("x");
  for (int i = 0; i < n; ++i) prev = g->call_function("operator.add", {prev, 1});
  g->output(prev);
  return g;
}

TEST(BlockMemory, ADestroyedGraphsBlocksServeTheNextGraph) {
  chain(5000).reset();  // whatever other tests left, blocks of these sizes are kept now
  const size_t kept = fx::detail::kept_block_memory();
  ASSERT_GT(kept, 0u);
  {
    auto g = chain(5000);  // takes the same blocks back
    EXPECT_LT(fx::detail::kept_block_memory(), kept);
    // Reused memory holds a graph like any other.
    EXPECT_EQ(g->size(), 5002u);
    EXPECT_EQ(g->nodes().to_vector()[5000]->name(), "add_4999");
    EXPECT_NE(g->python_code().src.find("add_4999 = add_4998 + 1;  add_4998 = None"), std::string::npos);
  }
  EXPECT_EQ(fx::detail::kept_block_memory(), kept);
}

TEST(BlockMemory, WhatIsKeptIsBounded) {
  chain(200000).reset();  // about 60 MB of blocks
  EXPECT_LE(fx::detail::kept_block_memory(), size_t{32} << 20);
  EXPECT_GT(fx::detail::kept_block_memory(), 0u);
}

}  // namespace
