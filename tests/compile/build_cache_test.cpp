// The kernel cache against other processes and other compilers
// (build_library, src/compile/build.cpp).
#include "../../src/compile/phases.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

// An empty directory of this test's own.
std::filesystem::path build_cache_dir(const std::string& name) {
  std::filesystem::path d =
      std::filesystem::path(testing::TempDir()) / ("fxcpp_build_cache_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A kernel source that nothing built before: this process remembers every
// library it loaded, by hash.
std::string new_probe_source() {
  return "// " + std::to_string(getpid()) + " " +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
         "\nextern \"C\" int fxcpp_probe() { return 42; }\n";
}

// Six processes build the same kernel into one cache at once: each loads it,
// and the cache holds its library, source and log, with no file of a
// process's own left behind. Each writes under its own names and renames; when
// they shared one source file, one process truncated what another's compiler
// was reading.
TEST(BuildCache, ProcessesThatBuildOneKernelAtOnceAllLoadIt) {
  const std::filesystem::path dir = build_cache_dir("race");
  const std::string source = new_probe_source();
  std::vector<pid_t> children;
  for (int i = 0; i < 6; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 1;
      try {
        auto lib = fx::compile_detail::build_library(source, dir.string(), "c++");
        auto probe = reinterpret_cast<int (*)()>(lib->symbol("fxcpp_probe"));
        code = probe() == 42 ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 3u) << ::testing::PrintToString(names);
  const std::string hash = std::filesystem::path(names[0]).stem();
  EXPECT_EQ(names, (std::vector<std::string>{hash + ".cpp", hash + ".log", hash + ".so"}));
}

// Sets PATH for the scope of one build.
class PathFor {
 public:
  explicit PathFor(const std::string& first) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    setenv("PATH", (first + ":" + old_).c_str(), 1);
  }
  ~PathFor() { setenv("PATH", old_.c_str(), 1); }
  PathFor(const PathFor&) = delete;
  PathFor& operator=(const PathFor&) = delete;

 private:
  std::string old_;
};

// Two compilers of one name, found through PATH, which differ only in what
// `--version` says (a g++ upgraded in place): the second builds its own
// library rather than loading the first one's, and the first finds its own
// again.
TEST(BuildCache, ACompilerOfAnotherVersionBuildsAnew) {
  const std::filesystem::path dir = build_cache_dir("version");
  for (const char* version : {"1", "2"}) {
    std::filesystem::create_directories(dir / version);
    const std::filesystem::path cc = dir / version / "fxcpp-test-cc";
    std::ofstream(cc) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo fxcpp-test-cc " << version
                      << "; exit 0; fi\nexec c++ \"$@\"\n";
    std::filesystem::permissions(cc, std::filesystem::perms::owner_all);
  }
  const std::string source = new_probe_source();
  const std::string cache = (dir / "cache").string();
  auto build_with = [&](const std::string& version) {
    PathFor path((dir / version).string());
    return fx::compile_detail::build_library(source, cache, "fxcpp-test-cc");
  };
  auto one = build_with("1");
  auto two = build_with("2");
  EXPECT_NE(one->hash, two->hash);
  EXPECT_FALSE(two->cache_hit);
  auto again = build_with("1");
  EXPECT_EQ(again->hash, one->hash);
  EXPECT_TRUE(again->cache_hit);
}

}  // namespace
