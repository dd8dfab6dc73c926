#!/usr/bin/env bash
# Installs everything fxcpp needs from Debian 12 packages. Idempotent, and
# silent when everything is already there.
set -euo pipefail

packages=(
  cmake g++ make                     # the toolchain
  libtorch-dev                       # LibTorch 1.13: the tensor runtime
  python3-torch python3-torchvision  # torch.fx 1.13: the test oracle and benchmark peer
  python3-tabulate                   # print_tabular in torch.fx
  python3-pydot graphviz             # FxGraphDrawer: torch.fx's drawer and the dot renderer
  libgtest-dev libgmock-dev          # GoogleTest
  libbenchmark-dev                   # Google Benchmark
  nlohmann-json3-dev                 # JSON for the conformance harness
  clang-16 libfuzzer-16-dev libclang-rt-16-dev  # libFuzzer on fx::load (scripts/fuzz.sh)
  llvm-16                            # its llvm-symbolizer, for readable stacks in findings
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "fxcpp setup: installing ${missing[*]}"
log=$(mktemp)
if ! { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log"
  echo "fxcpp setup: apt-get failed (log above)" >&2
  exit 1
fi
rm -f "$log"
