#!/usr/bin/env bash
# fx::capture beside make_fx on resnet50: capture time of a forward and of a
# training step, each over one eager run of the same code on its own side,
# and fxcpp's capture time over make_fx's; one markdown table (see
# docs/benchmarks.md). Builds nothing.
#
#   bench/run_capture_bench.sh path/to/capture_bench [--runs N] [--batch B] [--threads T]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
bench=${1:?usage: run_capture_bench.sh path/to/capture_bench [--runs N] [--batch B] [--threads T]}
shift
out=${FX_BENCH_OUT:-$(mktemp -d)}
"$bench" "$@" >"$out/fxcpp.json"
"$FXCPP_PYTHON" "$here/fx_capture_bench.py" "$@" >"$out/torch.json"
"$FXCPP_PYTHON" - "$out/fxcpp.json" "$out/torch.json" <<'PY'
import json, sys
cpp, py = (json.load(open(p)) for p in sys.argv[1:3])
rows = {side: {r["row"]: r for r in report["rows"]} for side, report in (("cpp", cpp), ("py", py))}
print(f"resnet50, batch {cpp['batch']}, {cpp['threads']} thread(s), {cpp['runs']} runs each: median (min - max)")
print(f"graph nodes: forward {cpp['forward_nodes']} (make_fx {py['forward_nodes']}), "
      f"training step {cpp['step_nodes']} (make_fx {py['step_nodes']})")
print()
print("| what | fxcpp eager | fx::capture | capture / eager | PyTorch eager | make_fx | make_fx / eager | make_fx / fx::capture |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for what, eager, cap in (("forward (eval)", "eager_forward", "capture_forward"),
                         ("training step", "eager_step", "capture_step")):
    c, p = rows["cpp"], rows["py"]
    ce, cc, pe, pc = (r[k]["median_ms"] for r, k in ((c, eager), (c, cap), (p, eager), (p, cap)))
    print(f"| {what} | {ce:.0f} ms | {cc:.0f} ms | {cc / ce:.2f}x | {pe:.0f} ms | {pc:.0f} ms | {pc / pe:.2f}x "
          f"| {pc / cc:.2f}x |")
PY
