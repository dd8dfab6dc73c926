#!/usr/bin/env bash
# Installs everything fxcpp needs: Debian 12 packages, and torch 2.14 +
# torchvision (LibTorch, the test oracle and the benchmark peers) from PyPI
# into a virtual environment outside the clone (scripts/env.sh says where).
# Idempotent, and silent when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

packages=(
  cmake g++ make                     # the toolchain
  python3 python3-venv               # the venv that holds torch (python/requirements.txt)
  graphviz                           # the dot renderer behind FxGraphDrawer
  libgtest-dev libgmock-dev          # GoogleTest
  libbenchmark-dev                   # Google Benchmark
  nlohmann-json3-dev                 # JSON for the file format and the conformance harness
  clang-16 libfuzzer-16-dev libclang-rt-16-dev  # libFuzzer on fx::load (scripts/fuzz.sh)
  llvm-16                            # its llvm-symbolizer, for readable stacks in findings
  clang-format                       # the format check of src/ and include/ (scripts/check_format.sh)
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
if [ ${#missing[@]} -ne 0 ]; then
  echo "fxcpp setup: installing ${missing[*]}"
  log=$(mktemp)
  if ! { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log"
    echo "fxcpp setup: apt-get failed (log above)" >&2
    exit 1
  fi
  rm -f "$log"
fi

# torch's wheels with their CUDA libraries are ~5 GB: made once per machine
# and per set of pins, then reused. The marker is written last, so an
# interrupted install is redone rather than trusted.
if [ ! -f "$FXCPP_VENV/.fxcpp-complete" ]; then
  echo "fxcpp setup: installing python/requirements.txt into $FXCPP_VENV (torch 2.14: about 5 GB, once per machine)"
  rm -rf "$FXCPP_VENV"
  mkdir -p "$(dirname "$FXCPP_VENV")"
  # Debian's python3, when the one on PATH cannot make a venv.
  python=python3
  python3 -m venv --help >/dev/null 2>&1 || python=/usr/bin/python3
  "$python" -m venv "$FXCPP_VENV"
  "$FXCPP_VENV/bin/pip" install -q --disable-pip-version-check -r python/requirements.txt
  "$FXCPP_VENV/bin/python" -c 'import torch, torchvision, transformers, timm, tabulate, pydot' \
    || { echo "fxcpp setup: the venv's torch does not import" >&2; exit 1; }
  touch "$FXCPP_VENV/.fxcpp-complete"
fi
