#!/usr/bin/python3
"""Prints exec_bench (fxcpp) and fx_exec_bench.py (torch.fx, TorchScript) side by side.

    compare_exec.py FXCPP_JSON... -- TORCHFX_JSON...

Each FXCPP_JSON is the output of `exec_bench --benchmark_format=json`, each
TORCHFX_JSON the output of bench/fx_exec_bench.py, one file per round.
Every figure is the median over the rounds (each round's figure is Google
Benchmark's mean over its iterations on the C++ side, the median over runs
on the Python side). CPU time (of the timing thread) is the primary figure,
since the machine may be shared; wall time is shown beside it. Needs no torch.
"""

import json
import statistics
import sys

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
EXEC_TARGET = 1.10   # GraphModule at most 10 % slower than handwritten LibTorch
TRACE_TARGET = 50.0  # tracing the 10k-layer MLP at least 50x faster than torch.fx


def load_fxcpp(paths):
    """{(workload, n): [(wall, cpu), ...]} over rounds."""
    out, ctx = {}, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        ctx = data.get("context", ctx)
        for b in data["benchmarks"]:
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            name = b.get("run_name", b["name"]).split("/")
            key = (name[0].removeprefix("BM_"), int(name[1]))
            unit = UNIT[b.get("time_unit", "ns")]
            out.setdefault(key, []).append((b["real_time"] * unit, b["cpu_time"] * unit))
    return ctx, out


def load_torchfx(paths):
    out, info = {}, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        info = data
        for r in data["results"]:
            out.setdefault((r["workload"], r["n"]), []).append((r["seconds"], r["cpu_seconds"]))
    return info, out


def med(runs):
    """(median wall, median cpu, number of rounds) or None."""
    if not runs:
        return None
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs), len(runs)


def fmt_time(s):
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_ratio(r):
    return f"{r:,.0f}×" if r >= 100 else f"{r:.3g}×"


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    i = sys.argv.index("--")
    ctx, cpp = load_fxcpp(sys.argv[1:i])
    info, py = load_torchfx(sys.argv[i + 1:])

    def row(label, n, m, base=None, base_label="", per="op"):
        if m is None:
            return None
        wall, cpu, k = m
        cells = [label, f"{n:,}", f"{fmt_time(cpu)} ({fmt_time(wall)})", f"{cpu / n * 1e9:,.0f} ns"]
        if base is not None:
            cells.append(f"{fmt_ratio(cpu / base[1])} ({fmt_ratio(wall / base[0])}) {base_label}")
        else:
            cells.append("")
        cells.append(str(k))
        return "| " + " | ".join(cells) + " |"

    print("Execution: N tiny ops on a 4x4 tensor; time per forward, CPU (wall); ratio to handwritten LibTorch C++")
    print()
    print("| runs | N | time per call: CPU (wall) | per op | vs handwritten C++: CPU (wall) | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    n = 1000
    hand = med(cpp.get(("exec_handwritten", n)))
    gm = med(cpp.get(("exec_graph_module", n)))
    rows = [
        row("handwritten LibTorch C++", n, hand, hand, ""),
        row("fxcpp GraphModule", n, gm, hand, ""),
        row("fxcpp Interpreter", n, med(cpp.get(("exec_interpreter", n))), hand, ""),
        row("torch.fx GraphModule (Python)", n, med(py.get(("exec_torchfx", n))), hand, ""),
        row("TorchScript (torch.jit.script of it)", n, med(py.get(("exec_torchscript", n))), hand, ""),
        row("Python eager, handwritten", n, med(py.get(("exec_python", n))), hand, ""),
    ]
    print("\n".join(r for r in rows if r))
    print()
    if gm and hand:
        ok = "met" if gm[1] / hand[1] <= EXEC_TARGET else "NOT met"
        print(f"Target GraphModule / handwritten ≤ {EXEC_TARGET:.2f}: {gm[1] / hand[1]:.3f} CPU, "
              f"{gm[0] / hand[0]:.3f} wall ({ok}).")
        for w, label in [("exec_torchfx", "torch.fx GraphModule"), ("exec_torchscript", "TorchScript")]:
            p = med(py.get((w, n)))
            if p:
                print(f"{label} / fxcpp GraphModule: {fmt_ratio(p[1] / gm[1])} CPU, {fmt_ratio(p[0] / gm[0])} wall.")
    print()
    print("Tracing: an MLP of N layers (Linear(8, 8) + ReLU), torchvision's resnet50 (N = 1), a chain over N tensor "
          "constants; CPU (wall)")
    print()
    print("| workload | N | fxcpp | torch.fx | torch.fx / fxcpp: CPU (wall) | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    headline = None
    for w, label in [("trace_mlp", "MLP: Tracer().trace"), ("symbolic_trace_mlp", "MLP: symbolic_trace"),
                     ("trace_resnet50", "resnet50: Tracer().trace"),
                     ("symbolic_trace_resnet50", "resnet50: symbolic_trace"),
                     ("symbolic_trace_constants", "tensor constants: symbolic_trace")]:
        for layers in sorted({k[1] for k in cpp if k[0] == w} | {k[1] for k in py if k[0] == w}):
            c, p = med(cpp.get((w, layers))), med(py.get((w, layers)))
            ct = f"{fmt_time(c[1])} ({fmt_time(c[0])})" if c else "—"
            pt = f"{fmt_time(p[1])} ({fmt_time(p[0])})" if p else "—"
            ratio = f"{fmt_ratio(p[1] / c[1])} ({fmt_ratio(p[0] / c[0])})" if c and p else "—"
            rounds = f"{c[2] if c else 0} / {p[2] if p else 0}"
            print(f"| {label} | {layers:,} | {ct} | {pt} | {ratio} | {rounds} |")
            if c and p and w == "trace_mlp" and layers == 10000:
                headline = p[1] / c[1]
    print()
    if headline is not None:
        ok = "met" if headline >= TRACE_TARGET else "NOT met"
        print(f"Target Tracer().trace of the 10k-layer MLP ≥ {TRACE_TARGET:.0f}× faster than torch.fx: "
              f"{headline:.1f}× CPU ({ok}).")
    print()
    print(f"fxcpp: {ctx.get('executable', 'exec_bench')} on {ctx.get('num_cpus', '?')} CPUs (mean over iterations "
          f"per round); torch {info.get('torch_version', '?')} on Python {info.get('python', '?')} "
          f"({info.get('timing', '')}); medians over rounds.")


if __name__ == "__main__":
    main()
