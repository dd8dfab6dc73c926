#!/usr/bin/env bash
# Runs the passes benchmarks of fxcpp and torch.fx and prints one markdown
# table comparing them, with the 50x target checked (see docs/benchmarks.md).
# Builds nothing; torch.fx takes about 3 minutes.
#
#   bench/run_passes_bench.sh path/to/passes_bench [passes_bench options...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FX_PEER=fx_passes_bench.py COMPARE_ARGS="--min-ratio 50" exec "$here/run_graph_bench.sh" "$@"
