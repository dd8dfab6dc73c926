#!/usr/bin/env bash
# Builds a libFuzzer target in the sanitizer build (build-sanitize/: clang-16,
# ASan + UBSan, the same tree scripts/test.sh runs the sanitizer tests from)
# and runs it for a bounded time on its seed corpus:
#   load  fx::load (GraphModule files): the valid file in the fuzzer's three
#         modes and tests/serialize/fuzz_corpus/;
#   pt2   fx::load_exported (.pt2): the programs of tests/pt2/fuzz_corpus/ in
#         the fuzzer's three modes.
# A crash, a leak, or an exception other than fx::LoadError fails the run;
# libFuzzer writes the input to build-sanitize/findings/. The corpus grown by
# the run stays in build-sanitize/corpus[-pt2]/ and seeds the next run.
#
#   scripts/fuzz.sh [SECONDS] [load|pt2]     # default 60 load
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
target=${2:-load}
case "$target" in
  load) fuzzer=fx_load_fuzzer seeds=fx_load_fuzz_seeds corpus=build-sanitize/corpus ;;
  pt2) fuzzer=fx_pt2_fuzzer seeds=fx_pt2_fuzz_seeds corpus=build-sanitize/corpus-pt2 ;;
  *) echo "usage: scripts/fuzz.sh [SECONDS] [load|pt2]" >&2; exit 2 ;;
esac
bash scripts/setup.sh
source scripts/env.sh
jobs=$(nproc)

cmake -S . -B build-sanitize "${fxcpp_sanitizer_args[@]}" "${fxcpp_cmake_args[@]}" >/dev/null
cmake --build build-sanitize -j"$jobs" --target "$fuzzer" "$seeds"

mkdir -p "$corpus" build-sanitize/findings
if [ "$target" = load ]; then
  build-sanitize/fuzz/$seeds build-sanitize/seeds tests/serialize/fuzz_corpus/*
  seed_dir=build-sanitize/seeds
else
  build-sanitize/fuzz/$seeds build-sanitize/seeds-pt2
  seed_dir=build-sanitize/seeds-pt2
fi
export LSAN_OPTIONS=suppressions=$PWD/tests/serialize/lsan.supp
# clang-16's sanitizers need clang-16's symbolizer (the llvm-symbolizer on
# PATH may be another version's).
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1
# -rss_limit_mb: LibTorch and the valid files take ~300 MB before the first input.
build-sanitize/fuzz/$fuzzer "$corpus" "$seed_dir" \
  -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build-sanitize/findings/ -print_final_stats=1
echo "$fuzzer: no findings in ${seconds} s"
