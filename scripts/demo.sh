#!/usr/bin/env bash
# Installs, builds and runs the main demo: the FX tutorial's first example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON "${fxcpp_cmake_args[@]}" >/dev/null  # batches of files: LibTorch parsed once each
cmake --build build -j"$(nproc)" --target seed_tutorial
./build/examples/seed_tutorial
