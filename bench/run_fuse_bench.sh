#!/usr/bin/env bash
# Conv+BatchNorm folding on resnet50: eval latency before and after fuse, in
# fxcpp and in PyTorch (eager, torch.fx, torch.fx's fuse) on the same weights,
# printed as one markdown table (see docs/benchmarks.md). Builds nothing.
#
#   bench/run_fuse_bench.sh path/to/fuse_bench [--runs N] [--batch B] [--threads T]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
bench=${1:?usage: run_fuse_bench.sh path/to/fuse_bench [--runs N] [--batch B] [--threads T]}
shift
out=${FX_BENCH_OUT:-$(mktemp -d)}
"$bench" "$out/resnet50.pt" "$@" >"$out/fxcpp.json"
"$FXCPP_PYTHON" "$here/fx_fuse_bench.py" "$out/resnet50.pt" "$@" >"$out/torch.json"
"$FXCPP_PYTHON" - "$out/fxcpp.json" "$out/torch.json" <<'EOF'
import json, sys
cpp, py = (json.load(open(p)) for p in sys.argv[1:3])
base = {r["row"]: r for r in py["rows"]}["eager"]["median_ms"]
names = {"eager": "eager", "graph_module": "GraphModule (symbolic_trace)", "fused": "GraphModule after fuse"}
print(f"resnet50, eval, batch {cpp['batch']}, {cpp['threads']} thread(s), {cpp['runs']} runs each: "
      "median (min - max), and the median over PyTorch eager's")
print()
print("| side | what runs | median | min - max | vs PyTorch eager |")
print("|---|---|---:|---:|---:|")
for side, report in (("fxcpp", cpp), ("PyTorch", py)):
    for r in report["rows"]:
        print(f"| {side} | {names[r['row']]} | {r['median_ms']:.1f} ms | {r['min_ms']:.1f} - {r['max_ms']:.1f} ms "
              f"| {r['median_ms'] / base:.2f}x |")
speedup = {}
for side, report in (("fxcpp", cpp), ("torch.fx", py)):
    rows = {r["row"]: r for r in report["rows"]}
    speedup[side] = rows["graph_module"]["median_ms"] / rows["fused"]["median_ms"]
print()
print(f"fuse makes the GraphModule {speedup['fxcpp']:.2f}x faster in fxcpp, {speedup['torch.fx']:.2f}x in torch.fx")
EOF
