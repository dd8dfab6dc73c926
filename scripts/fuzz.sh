#!/usr/bin/env bash
# Builds the libFuzzer target on fx::load with clang-16 (ASan + UBSan) and
# runs it for a bounded time on the seed corpus: the valid file in the
# fuzzer's three modes and tests/serialize/fuzz_corpus/. A crash, a leak, or
# an exception other than fx::LoadError fails the run; libFuzzer writes the
# input to build-fuzz/findings/. The corpus grown by the run stays in
# build-fuzz/corpus/ and seeds the next run.
#
#   scripts/fuzz.sh [SECONDS]     # default 60
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
bash scripts/setup.sh
source scripts/env.sh
jobs=$(nproc)

cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DFXCPP_FUZZ=ON \
  -DFXCPP_BUILD_TESTS=OFF -DFXCPP_BUILD_BENCH=OFF -DFXCPP_BUILD_EXAMPLES=OFF -DFXCPP_BUILD_TOOLS=OFF \
  "${fxcpp_cmake_args[@]}" >/dev/null
cmake --build build-fuzz -j"$jobs" --target fx_load_fuzzer fx_load_fuzz_seeds

mkdir -p build-fuzz/corpus build-fuzz/findings
build-fuzz/fuzz/fx_load_fuzz_seeds build-fuzz/seeds tests/serialize/fuzz_corpus/*
export LSAN_OPTIONS=suppressions=$PWD/tests/serialize/lsan.supp
# clang-16's sanitizers need clang-16's symbolizer (the llvm-symbolizer on
# PATH may be another version's).
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1
# -rss_limit_mb: LibTorch and the valid file take ~300 MB before the first input.
build-fuzz/fuzz/fx_load_fuzzer build-fuzz/corpus build-fuzz/seeds \
  -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build-fuzz/findings/ -print_final_stats=1
echo "fx_load_fuzzer: no findings in ${seconds} s"
