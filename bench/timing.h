#pragma once
// What the single-program benchmarks (fuse_bench, capture_bench) share: the
// --runs/--batch/--threads flags, timing a body N times, and printing the
// rows as the JSON their run_*.sh scripts read.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace fxbench {

struct Flags {
  int runs, batch = 1, threads = 0;  // threads 0: LibTorch's default
};

// Parses `--runs N --batch B --threads T` from argv[first]; false on
// anything else.
inline bool parse_flags(int argc, char** argv, int first, Flags& flags) {
  for (int i = first; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    const std::string flag = argv[i];
    int value = 0;
    try {
      value = std::stoi(argv[i + 1]);
    } catch (const std::exception&) {
      return false;
    }
    if (flag == "--runs")
      flags.runs = value;
    else if (flag == "--batch")
      flags.batch = value;
    else if (flag == "--threads")
      flags.threads = value;
    else
      return false;
  }
  return flags.runs > 0 && flags.batch > 0 && flags.threads >= 0;
}

struct Row {
  std::string name;
  std::vector<double> ms;  // sorted
};

// `warmup` untimed runs, then `runs` timed ones, with a progress line on stderr.
inline Row time_runs(const std::string& name, int warmup, int runs, const std::function<void()>& body) {
  for (int i = 0; i < warmup; ++i) body();
  Row row{name, {}};
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    row.ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    std::fprintf(stderr, "\r%-28s %3d/%d", name.c_str(), i + 1, runs);
  }
  std::fprintf(stderr, "\n");
  std::sort(row.ms.begin(), row.ms.end());
  return row;
}

// `"rows": [{"row": ..., "median_ms": ..., "min_ms": ..., "max_ms": ...}, ...]`
inline void print_rows(const std::vector<Row>& rows) {
  std::printf("\"rows\": [");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& ms = rows[i].ms;
    std::printf("%s{\"row\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f}", i ? ", " : "",
                rows[i].name.c_str(), ms[ms.size() / 2], ms.front(), ms.back());
  }
  std::printf("]");
}

}  // namespace fxbench
