#!/usr/bin/python3
"""Prints graph_bench (fxcpp) and fx_graph_bench.py (torch.fx) side by side.

    compare.py FXCPP_JSON TORCHFX_JSON [--min-ratio R]

Also compares passes_bench with fx_passes_bench.py: workloads not in the
graph_bench list are printed after it, in the order fxcpp ran them.
--min-ratio R checks that every workload with both timings at N >= 10,000
is at least R times faster in fxcpp.

FXCPP_JSON is the output of `graph_bench --benchmark_format=json`,
TORCHFX_JSON the output of bench/fx_graph_bench.py. Prints one markdown
table (workload, N, fxcpp time, torch.fx time, ratio torch.fx / fxcpp,
fxcpp ns per node) and a check of the two targets. Needs no torch.
"""

import json
import sys

WORKLOADS = ["build", "iterate", "python_code", "build_python_code",
             "replace_all_uses", "eliminate_dead_code", "graph_copy"]
LABELS = {
    "build": "build",
    "iterate": "iterate",
    "python_code": "python_code",
    "build_python_code": "build + python_code",
    "replace_all_uses": "replace_all_uses_with",
    "eliminate_dead_code": "eliminate_dead_code",
    "graph_copy": "graph_copy",
    "shape_prop_floor": "shape_prop: the adds alone (LibTorch)",
}
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

HEADLINE_N = 10000
HEADLINE_RATIO = 100.0
ITERATE_TARGET = 500e6  # nodes per second


def load_fxcpp(path):
    """{(workload, n): {"seconds": s, "nodes_per_s": r}} from Google Benchmark JSON."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"]).split("/")
        workload = name[0].removeprefix("BM_")
        n = int(b.get("N", name[1]))
        out[(workload, n)] = {
            "seconds": b["real_time"] * UNIT[b.get("time_unit", "ns")],
            "nodes_per_s": b.get("nodes_per_s"),
        }
    return data.get("context", {}), out


def load_torchfx(path):
    with open(path) as f:
        data = json.load(f)
    return data, {(r["workload"], r["n"]): r for r in data["results"]}


def fmt_time(s):
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_num(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def fmt_ratio(r):
    if r >= 100:
        return f"{r:,.0f}×"
    return f"{r:.3g}×"


def main():
    argv = sys.argv[1:]
    min_ratio = None
    if "--min-ratio" in argv:
        i = argv.index("--min-ratio")
        min_ratio = float(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) != 2:
        sys.exit(__doc__)
    ctx, cpp = load_fxcpp(argv[0])
    fxinfo, py = load_torchfx(argv[1])
    workloads = list(WORKLOADS)
    for (w, _) in list(cpp) + list(py):
        if w not in workloads:
            workloads.append(w)
    ratio_checks = []

    rows = ["| workload | N | fxcpp | torch.fx | torch.fx / fxcpp | fxcpp ns/node |",
            "|---|---:|---:|---:|---:|---:|"]
    headline = None
    best_iterate = None
    sizes = sorted({n for (_, n) in cpp} | {n for (_, n) in py})
    for w in workloads:
        for n in sizes:
            c = cpp.get((w, n))
            p = py.get((w, n))
            if c is None and p is None:
                continue
            ct = fmt_time(c["seconds"]) if c else "—"
            per_node = ""
            if c:
                per_node = fmt_num(c["seconds"] / n * 1e9)
                if c.get("nodes_per_s"):
                    per_node += f" ({c['nodes_per_s'] / 1e6:.0f} M nodes/s)"
                    if best_iterate is None or c["nodes_per_s"] > best_iterate[1]:
                        best_iterate = (n, c["nodes_per_s"])
            if p is None:
                pt, ratio = "—", "—"
            elif p["status"] == "ok":
                pt = fmt_time(p["seconds"])
                ratio = fmt_ratio(p["seconds"] / c["seconds"]) if c else "—"
                if c and n >= 10000:
                    ratio_checks.append((w, n, p["seconds"] / c["seconds"], False))
                if c and w == "build_python_code" and n == HEADLINE_N:
                    headline = p["seconds"] / c["seconds"]
            elif "estimated_seconds" in p:
                est = p["estimated_seconds"]
                pt = f"not run (est. {fmt_time(est) if est < 10 else f'{est:,.0f} s'})"
                ratio = f"~{fmt_ratio(est / c['seconds'])} (est.)" if c else "—"
                if c and n >= 10000:
                    ratio_checks.append((w, n, est / c["seconds"], True))
            else:
                pt, ratio = "not run", "—"
            rows.append(f"| {LABELS.get(w, w)} | {n:,} | {ct} | {pt} | {ratio} | {per_node} |")
    print("\n".join(rows))
    print()
    print(f"fxcpp: {ctx.get('executable', 'graph_bench')} on {ctx.get('num_cpus', '?')} CPUs "
          f"(mean over iterations); torch.fx {fxinfo.get('torch_version', '?')} on Python "
          f"{fxinfo.get('python', '?')} ({fxinfo.get('timing', '')}). \"not run\": torch.fx was "
          f"estimated to take over {fxinfo.get('skip_estimate_seconds', '?')} s there, or took over "
          f"{fxinfo.get('limit_seconds', '?')} s at a smaller N; the estimate extrapolates the growth "
          f"of the last two sizes run.")
    if headline is not None:
        ok = "met" if headline >= HEADLINE_RATIO else "NOT met"
        print(f"Target build + python_code at N={HEADLINE_N:,}: {headline:,.0f}× faster than torch.fx "
              f"(target ≥ {HEADLINE_RATIO:.0f}×: {ok}).")
    if min_ratio is not None:
        for w, n, r, est in ratio_checks:
            ok = "met" if r >= min_ratio else "NOT met"
            print(f"Target {LABELS.get(w, w)} at N={n:,}: {fmt_ratio(r)}{' (est.)' if est else ''} faster "
                  f"than torch.fx (target ≥ {min_ratio:.0f}×: {ok}).")
    for n in sizes:
        # What the operations alone cost bounds what any ShapeProp that runs them can reach.
        floor, p = cpp.get(("shape_prop_floor", n)), py.get(("shape_prop", n))
        if floor and p and p["status"] == "ok":
            print(f"shape_prop at N={n:,}: its adds alone, hand-written in LibTorch, take "
                  f"{fmt_time(floor['seconds'])}: running them, no ShapeProp can be more than "
                  f"{fmt_ratio(p['seconds'] / floor['seconds'])} faster than torch.fx.")
    if best_iterate is not None:
        ok = "met" if best_iterate[1] >= ITERATE_TARGET else "NOT met"
        print(f"Target iterate: best {best_iterate[1] / 1e6:.0f} M nodes/s at N={best_iterate[0]:,} "
              f"(target ≥ {ITERATE_TARGET / 1e6:.0f} M nodes/s: {ok}).")


if __name__ == "__main__":
    main()
