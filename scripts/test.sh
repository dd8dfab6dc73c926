#!/usr/bin/env bash
# Installs, builds and runs every fxcpp test: a clang-format check, then the
# unit, runtime, tracing and fx::nn tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, with clang-tidy on the library from the same
# clang-16 build's compile commands, then a
# half minute of coverage-guided fuzzing of each file loader (libFuzzer, from
# the same sanitizer build), then, on a g++ release build of the library,
# tools and examples, the tests the sanitizer build does not run (the
# torch.fx 2.14 conformance tests, the corpus, models, fxc and the demo).
# Each test runs once; the commands below run the whole suite on the release
# build, and the slow packaging and export tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
jobs=$(nproc)
# Each step says when it starts, in minutes since the start of the tests.
step() { echo "== [$((SECONDS / 60)) min] $*"; }
# Each test runs in one of two builds, chosen by its labels: under the
# sanitizers, or, too slow under ASan or needing the tools, on the release build.
sanitizer_tests=(-L "unit|runtime|trace|nn|passes|serialize|^capture$|^compile$|pt2" -LE "export|corpus")
release_tests=(-L "conformance|corpus|models|fxc|examples" -LE "packaging|export")

step "format: src/ and include/ as clang-format writes them (.clang-format)"
bash scripts/check_format.sh

step "sanitizer build (clang-16, ASan + UBSan): unit, runtime, tracing, fx::nn, passes, serialize, capture, compile and .pt2 tests, and the two fuzzers"
# One build for the sanitizer tests and the fuzzers (scripts/env.sh's
# fxcpp_sanitizer_args): fxcpp is compiled once with the sanitizers and
# libFuzzer's coverage, not once for each.
# Unity builds (CMAKE_UNITY_BUILD): parsing LibTorch's headers is most of a
# source file's compile time, and a batch of 8 files parses them once.
cmake -S . -B build-sanitize "${fxcpp_sanitizer_args[@]}" "${fxcpp_cmake_args[@]}" >/dev/null
# gtest_discover_tests lists each test binary's tests as it is linked; leaks
# are checked when the tests run (ctest below), not in those listings, where a
# LeakSanitizer failure at exit would fail the build instead of a test.
ASAN_OPTIONS=detect_leaks=0 cmake --build build-sanitize -j"$jobs" --target fx_sanitizer_tests \
  fx_load_fuzzer fx_load_fuzz_seeds fx_pt2_fuzzer fx_pt2_fuzz_seeds
step "clang-tidy: .clang-tidy's checks on the library, from the sanitizer build's compile commands"
bash scripts/tidy.sh build-sanitize

step "sanitizer tests"
# Release only: the exported C++ projects (label export) build LibTorch code, and
# the corpus through every pass (label corpus) takes minutes under ASan.
# clang-16's sanitizers need clang-16's symbolizer (the llvm-symbolizer on
# PATH may be another version's).
ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer \
  ctest --test-dir build-sanitize "${sanitizer_tests[@]}" --output-on-failure -j"$jobs"

step "fuzzing fx::load: libFuzzer for 30 s on the seed corpus"
bash scripts/fuzz.sh 30 load
step "fuzzing fx::load_exported (.pt2): libFuzzer for 30 s on the seed corpus"
bash scripts/fuzz.sh 30 pt2

step "release build (g++, -Werror): the library, tools and examples, and the programs of the tests the sanitizer build does not run"
# The benchmarks are not tests, and building them takes about 3 minutes of
# CPU: docs/benchmarks.md builds them (-DFXCPP_BUILD_BENCH=ON) and runs them.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DFXCPP_WERROR=ON -DFXCPP_BUILD_BENCH=OFF \
  "${fxcpp_cmake_args[@]}" >/dev/null
# A test binary lists its tests as it is linked (gtest_discover_tests). Once,
# in CI, that listing failed after printing every test, which fails the build
# with no test run; a second build step relinks only what failed, and a real
# build error fails it again.
cmake --build build -j"$jobs" --target fx_release_tests ||
  { step "the release build failed; building once more"; cmake --build build -j"$jobs" --target fx_release_tests; }
# Each test runs once: the sanitizer build ran the others (the labels above),
# and these are too slow under ASan or need the tools. The whole suite on the
# release build, those included:
#   cmake --build build -j2 && ctest --test-dir build -j2 -LE "packaging|export"
# Two tests build LibTorch projects and take minutes on 2 cores, so they run
# on their own:
#   ctest --test-dir build -L packaging  # fxcpp as a consumer uses it (install
#                                        # + find_package, add_subdirectory): 5 min
#   ctest --test-dir build -L export     # export_cpp's projects, and those of compiled
#                                        # programs, built and run: 5 min
# A test whose labels neither selection takes would run nowhere: fail on it.
# (The programs this build did not make list one unlabelled <program>_NOT_BUILT.)
names() { ctest --test-dir build -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | grep -v '_NOT_BUILT$' | sort -u; }
unrun=$(comm -23 <(names -LE "packaging|export") <(sort -u <(names "${sanitizer_tests[@]}") <(names "${release_tests[@]}")))
if [ -n "$unrun" ]; then
  echo "test.sh: no step runs these tests; give them a label of scripts/test.sh's selections:" $unrun >&2
  exit 1
fi
step "release tests: conformance, corpus, models, fxc and the demo"
ctest --test-dir build --output-on-failure -j"$jobs" "${release_tests[@]}"
