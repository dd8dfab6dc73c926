#!/usr/bin/env bash
# Builds the concurrency tests under ThreadSanitizer and runs them: eight
# threads printing, linting, generating code for and running one const graph
# and eight threads making and destroying graphs whose node blocks share one
# store of kept memory (tests/unit/concurrent_readers_test.cpp), and the capture tests, whose
# backward runs partly on the autograd engine's own threads
# (tests/capture/capture_test.cpp), a thread making large buffers while
# another captures, both in the capture's buffer pool
# (tests/capture/capture_buffers_test.cpp), four threads sharing one
# fx::compile module that compiles its specializations on first use
# (tests/compile/compile_test.cpp), and four threads running one compiled
# training step (tests/compile/training_step_test.cpp), four differentiating
# one compiled module (tests/compile/autograd_test.cpp), and eight sharing one
# kept weight value (tests/compile/weight_cache_test.cpp). A data race fails the run. About 12
# minutes on 2 cores, most of it building fxcpp once more; not part of CI's
# 45 minutes.
#
# LibTorch itself is not built with ThreadSanitizer: races inside it are not
# seen, and its kernels run on one thread (the tests set it) so that its
# OpenMP pool, which ThreadSanitizer cannot follow, stays out of the run.
# Its own hand-offs between the autograd engine's threads look like races
# for the same reason; tests/capture/tsan.supp names those LibTorch objects.
#
#   scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
jobs=$(nproc)

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_UNITY_BUILD=ON -DFXCPP_TSAN=ON -DFXCPP_BUILD_BENCH=OFF -DFXCPP_BUILD_EXAMPLES=OFF \
  -DFXCPP_BUILD_TOOLS=OFF "${fxcpp_cmake_args[@]}" >/dev/null
cmake --build build-tsan -j"$jobs" --target fx_concurrency_tests fx_capture_tests fx_capture_buffers_tests fx_compile_tests
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/capture/tsan.supp"
export OMP_NUM_THREADS=1
build-tsan/tests/unit/fx_concurrency_tests
build-tsan/tests/capture/fx_capture_tests
build-tsan/tests/capture/fx_capture_buffers_tests
build-tsan/tests/compile/fx_compile_tests \
  --gtest_filter=Compile.ThreadsShareOneCompiledModule:CompileTrainingStep.ThreadsAddTheirGradientsOneAtATime:CompileAutograd.ThreadsDifferentiateOneCompiledModule:WeightCache.ThreadsShareOneCache:PackWeights.ThreadsShareOnePackedModule
