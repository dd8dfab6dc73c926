#!/usr/bin/env bash
# fx::compile beside LibTorch eager, PyTorch eager and torch.compile (Inductor,
# CPU) on the same programs and machine, as one markdown table (see
# docs/benchmarks.md). Builds nothing.
#
#   bench/run_compile_bench.sh path/to/compile_bench [--runs N] [--threads T]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
bench=${1:?usage: run_compile_bench.sh path/to/compile_bench [--runs N] [--threads T]}
shift
out=${FX_BENCH_OUT:-$(mktemp -d)}
"$bench" "$@" >"$out/fxcpp.json"
"$FXCPP_PYTHON" "$here/fx_compile_bench.py" "$@" >"$out/torch.json"
"$FXCPP_PYTHON" - "$out/fxcpp.json" "$out/torch.json" <<'PY'
import json, sys
cpp, py = (json.load(open(p)) for p in sys.argv[1:3])
print(f"{cpp['threads']} thread(s), {cpp['runs']} runs each: median (min - max)")
print()
print("| program | LibTorch eager | fx::compile | PyTorch eager | torch.compile | fx::compile / torch.compile "
      "| first call: fx::compile, torch.compile | at a second size | at a third size |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for c, p in zip(cpp["programs"], py["programs"]):
    cr, pr = ({r["row"]: r for r in side["rows"]} for side in (c, p))
    cell = lambda r: f"{r['median_ms']:.3f} ms ({r['min_ms']:.3f} - {r['max_ms']:.3f})"
    ratio = cr["compiled"]["median_ms"] / pr["compiled"]["median_ms"]
    print(f"| {c['program']} | {cell(cr['eager'])} | {cell(cr['compiled'])} | {cell(pr['eager'])} "
          f"| {cell(pr['compiled'])} | {ratio:.2f}x | {c['first_call_ms'] / 1e3:.1f} s, {p['first_call_ms'] / 1e3:.1f} s "
          f"| {c['second_size_first_call_ms']:.0f} ms, {p['second_size_first_call_ms']:.0f} ms "
          f"| {c['third_size_first_call_ms']:.0f} ms, {p['third_size_first_call_ms']:.0f} ms |")
floors = [(c["program"], {r["row"]: r for r in c["rows"]}) for c in cpp["programs"]]
for name, rows in floors:
    if "floor" in rows:
        f, k = rows["floor"]["median_ms"], rows["compiled"]["median_ms"]
        print(f"\n{name}: the copy floor (x.clone()) takes {f:.3f} ms; fx::compile's kernel reaches "
              f"{100 * f / k:.0f} % of its bandwidth, {rows['eager']['median_ms'] / k:.1f}x LibTorch eager.")
PY
