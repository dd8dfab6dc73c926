#!/usr/bin/env bash
# Installs, builds and runs the main demo: the FX tutorial's first example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target seed_tutorial
./build/examples/seed_tutorial
