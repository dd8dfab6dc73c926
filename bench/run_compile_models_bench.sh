#!/usr/bin/env bash
# fx::compile on whole models beside LibTorch eager, PyTorch eager and
# torch.compile (Inductor, CPU), as one markdown table (see
# docs/benchmarks.md): per model and batch, the medians, the ratios, the
# first call of each compiler, fx::compile's first call in a second process
# with a warm kernel cache beside eager's first call in a third, and the
# peak tensor memory of a call. Builds
# nothing.
#
#   bench/run_compile_models_bench.sh path/to/compile_models_bench [--runs N] [--threads T]
#                                     [--batches 1,8] [--models resnet50,...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/env.sh"
bench=${1:?usage: run_compile_models_bench.sh path/to/compile_models_bench [flags]}
shift
out=${FX_BENCH_OUT:-$(mktemp -d)}
cache="$out/kernels"
rm -rf "$cache"
"$bench" "$@" --cache "$cache" >"$out/fxcpp.json"
# A second process: every library is in the cache, nothing is built.
"$bench" "$@" --cache "$cache" --first-call-only >"$out/fxcpp_warm.json"
# A third: eager's first call in a fresh process, which the warm one pays too
# (oneDNN's first convolutions, the allocator's first pages).
"$bench" "$@" --eager-first-call-only >"$out/eager_first.json"
(cd "$here" && "$FXCPP_PYTHON" fx_compile_models_bench.py "$@") >"$out/torch.json"
"$FXCPP_PYTHON" - "$out/fxcpp.json" "$out/fxcpp_warm.json" "$out/torch.json" "$out/eager_first.json" <<'PY'
import json, math, sys
cpp, warm, py, eager_first = (json.load(open(p)) for p in sys.argv[1:5])
key = lambda p: (p["program"], p["batch"])
warm_ms = {key(p): p["first_call_ms"] for p in warm["programs"]}
eager_first_ms = {key(p): p["first_call_ms"] for p in eager_first["programs"]}
torch_programs = {key(p): p for p in py["programs"]}
print(f"{cpp['threads']} thread(s), {cpp['runs']} runs each: median (min - max)")
print()
print("| model | batch | LibTorch eager | fx::compile | PyTorch eager | torch.compile | fx::compile / LibTorch eager "
      "| fx::compile / torch.compile | first call: fx::compile, torch.compile | warm first call: fx::compile, eager | "
      "peak memory: eager, fx::compile | kernels, ATen calls |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
speedups, versus_inductor = [], []
for c in cpp["programs"]:
    p = torch_programs[key(c)]
    cr, pr = ({r["row"]: r for r in side["rows"]} for side in (c, p))
    cell = lambda r: f"{r['median_ms']:.1f} ms ({r['min_ms']:.1f} - {r['max_ms']:.1f})"
    speedup = cr["eager"]["median_ms"] / cr["compiled"]["median_ms"]
    ratio = cr["compiled"]["median_ms"] / pr["compiled"]["median_ms"]
    speedups.append(speedup)
    versus_inductor.append(ratio)
    print(f"| {c['program']} | {c['batch']} | {cell(cr['eager'])} | {cell(cr['compiled'])} | {cell(pr['eager'])} "
          f"| {cell(pr['compiled'])} | {speedup:.2f}x | {ratio:.2f}x "
          f"| {c['first_call_ms'] / 1e3:.1f} s, {p['first_call_ms'] / 1e3:.1f} s | {warm_ms[key(c)]:.0f} ms, {eager_first_ms[key(c)]:.0f} ms "
          f"| {c['eager_peak_bytes'] / 2**20:.1f} MiB, {c['compiled_peak_bytes'] / 2**20:.1f} MiB "
          f"| {c['kernels']}, {c['extern_nodes']} |")
geomean = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"\nGeomean: fx::compile {geomean(speedups):.2f}x LibTorch eager; fx::compile's time "
      f"{geomean(versus_inductor):.2f}x torch.compile's (below 1 is faster).")
PY
