#!/usr/bin/env bash
# Builds tests/packaging/consumer against fxcpp both ways and checks that it
# prints the seed tutorial's graph and runs a function of fxcpp::torchvision.
# usage: check.sh SOURCE_DIR BUILD_DIR WORK_DIR TORCH_PREFIX
# (TORCH_PREFIX: where LibTorch's CMake config is, as for fxcpp's own build)
set -euo pipefail
src=$1 build=$2 work=$3 torch=$4
rm -rf "$work" && mkdir -p "$work"
quiet() { "$@" >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }; }
check() {
  "$1" >"$work/out.txt"
  grep -q "%add : \[num_users=1\] = call_function\[target=operator.add\](args = (%x, %param), kwargs = {})" "$work/out.txt" \
    || { echo "unexpected output from $1:"; cat "$work/out.txt"; exit 1; }
  "$1_torchvision" >"$work/out.txt"
  grep -q "^torchvision.ops.stochastic_depth.stochastic_depth returns its input out of training$" "$work/out.txt" \
    || { echo "unexpected output from $1_torchvision:"; cat "$work/out.txt"; exit 1; }
}

# 1. find_package after cmake --install
quiet cmake --install "$build" --prefix "$work/prefix"
quiet cmake -S "$src/tests/packaging/consumer" -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix;$torch"
quiet cmake --build "$work/installed" --parallel 2
check "$work/installed/consumer"
echo "find_package(fxcpp): ok"

# 2. add_subdirectory (a unity build, as fxcpp's own: LibTorch's headers parsed once per
#    batch of files instead of once per file, 5 minutes instead of over 10)
quiet cmake -S "$src/tests/packaging/consumer" -B "$work/subdir" -DFXCPP_SOURCE_DIR="$src" -DCMAKE_PREFIX_PATH="$torch" -DCMAKE_UNITY_BUILD=ON
quiet cmake --build "$work/subdir" --target consumer consumer_torchvision --parallel 2
check "$work/subdir/consumer"
echo "add_subdirectory(fxcpp): ok"
