#!/usr/bin/env bash
# Runs the execution-overhead and tracing benchmarks of fxcpp (exec_bench)
# and of torch.fx / TorchScript (fx_exec_bench.py) back to back, ROUNDS
# times, and prints one markdown table of medians and ratios (see
# docs/benchmarks.md). Builds nothing.
#
#   bench/run_exec_bench.sh path/to/exec_bench [exec_bench options...]
#
# Environment: PYTHON (default: the torch 2.14 venv's, scripts/env.sh),
# ROUNDS (default 3), FX_BENCH_OUT (a directory to keep the JSON files in).
set -euo pipefail

if [[ $# -lt 1 || ! -x $1 ]]; then
  echo "usage: $0 path/to/exec_bench [exec_bench options...]" >&2
  echo "build it first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2 --target exec_bench" >&2
  exit 2
fi
bench=$1
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
python=${PYTHON:-$FXCPP_PYTHON}
rounds=${ROUNDS:-3}
out=${FX_BENCH_OUT:-$(mktemp -d)}
[[ -n ${FX_BENCH_OUT:-} ]] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"

for ((r = 1; r <= rounds; ++r)); do
  echo "round $r/$rounds: fxcpp $bench" >&2
  "$bench" --benchmark_format=json "$@" >"$out/fxcpp.$r.json"
  echo "round $r/$rounds: torch.fx $here/fx_exec_bench.py" >&2
  "$python" "$here/fx_exec_bench.py" >"$out/torchfx.$r.json"
done
"$python" "$here/compare_exec.py" "$out"/fxcpp.*.json -- "$out"/torchfx.*.json
