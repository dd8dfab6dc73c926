#pragma once
// Compile options with a kernel cache of their own, new at each call, so
// that a test knows what it builds. Shared by the compile tests, which a
// unity build compiles as one source.
#include <fx/compile.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <string>

inline fx::CompileOptions fresh_options() {
  static std::atomic<int> n{0};
  fx::CompileOptions o;
  o.cache_dir =
      testing::TempDir() + "fxcpp_compile_test_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  return o;
}
