#!/usr/bin/env bash
# Runs the graph-core benchmarks of fxcpp and torch.fx and prints one
# markdown table comparing them (see docs/benchmarks.md). Builds nothing.
#
#   bench/run_graph_bench.sh path/to/graph_bench [graph_bench options...]
#
# Environment: PYTHON (default: the torch 2.14 venv's, scripts/env.sh),
# FX_BENCH_OUT (a directory to keep fxcpp.json and torchfx.json in),
# FX_PEER (the torch.fx script, default fx_graph_bench.py; run_passes_bench.sh
# sets fx_passes_bench.py), COMPARE_ARGS (more arguments for compare.py).
set -euo pipefail

if [[ $# -lt 1 || ! -x $1 ]]; then
  echo "usage: $0 path/to/graph_bench|passes_bench [options...]" >&2
  echo "build it first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFXCPP_BUILD_BENCH=ON && make -C build -j2 graph_bench" >&2
  exit 2
fi
bench=$1
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
python=${PYTHON:-$FXCPP_PYTHON}
out=${FX_BENCH_OUT:-$(mktemp -d)}
[[ -n ${FX_BENCH_OUT:-} ]] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"

echo "fxcpp: $bench" >&2
"$bench" --benchmark_format=json "$@" >"$out/fxcpp.json"
peer=${FX_PEER:-fx_graph_bench.py}
echo "torch.fx: $here/$peer" >&2
"$python" "$here/$peer" >"$out/torchfx.json"
# shellcheck disable=SC2086  # COMPARE_ARGS is a list of words
"$python" "$here/compare.py" "$out/fxcpp.json" "$out/torchfx.json" ${COMPARE_ARGS:-}
