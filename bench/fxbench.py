"""What the torch.fx sides of the benchmarks share: timing one workload,
stepping through the sizes (skipping those estimated to take too long), and
the JSON they print. Used by fx_graph_bench.py and fx_passes_bench.py."""

import gc
import json
import math
import platform
import sys
import time

import torch

# A size is skipped when its estimate exceeds this many times the limit: an
# exponent measured on two noisy sizes is rough (memory effects make linear
# workloads look like N^1.2 between 10k and 100k), and a quadratic workload
# overshoots any such margin by far.
ESTIMATE_SLACK = 1.5


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def measure(make):
    """Minimum over repeated runs of timed(state), in seconds, and the number
    of runs; make() -> (state, timed) builds a fresh input each run. Runs at
    least 3 times and 0.5 s, at most 20 times, or once when a run takes over
    2 s; the garbage collector is off while building and timing."""
    times = []
    while True:
        gc.disable()  # the inputs hold no garbage: building them needs no collection
        state, timed = make()
        t0 = time.perf_counter()
        result = timed(state)
        t = time.perf_counter() - t0
        gc.enable()
        del result, state
        gc.collect()
        times.append(t)
        if t > 2.0 or len(times) >= 20 or (len(times) >= 3 and sum(times) >= 0.5):
            return min(times), len(times)


def estimate(done, n):
    """Extrapolated seconds for size n from the (n, seconds) already measured."""
    if not done:
        return 0.0
    (n2, t2) = done[-1]
    k = 1.0
    if len(done) >= 2:
        (n1, t1) = done[-2]
        k = max(1.0, math.log(t2 / t1) / math.log(n2 / n1))
    return t2 * (n / n2) ** k


def run(workloads, sizes, limit, measure_at, width=20):
    """measure_at(workload, n) -> (seconds, runs) for every workload and size,
    smallest size first; a workload stops going up in N once a size took over
    `limit` seconds or the next is estimated to take over ESTIMATE_SLACK x
    limit. Prints the JSON report on stdout."""
    done = {w: [] for w in workloads}
    stopped = {w: None for w in workloads}
    results = []
    start = time.perf_counter()
    for n in sizes:
        for w in workloads:
            entry = {"workload": w, "n": n}
            est = estimate(done[w], n)
            if stopped[w] is None and est > ESTIMATE_SLACK * limit:
                stopped[w] = f"estimated {est:.0f} s > {ESTIMATE_SLACK * limit:.0f} s"
                log(f"{w:{width}s} N={n:>8d}  skipped: {stopped[w]}")
            if stopped[w] is not None:
                entry.update(status="skipped", reason=stopped[w], estimated_seconds=est)
                results.append(entry)
                continue
            t, reps = measure_at(w, n)
            done[w].append((n, t))
            entry.update(status="ok", seconds=t, repeats=reps)
            log(f"{w:{width}s} N={n:>8d}  {t * 1e3:12.3f} ms  ({reps} runs)")
            if t > limit:
                stopped[w] = f"N={n} took {t:.0f} s > {limit:.0f} s"
            results.append(entry)
    json.dump({
        "library": "torch.fx",
        "torch_version": torch.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "timing": "min over runs, gc disabled while timing",
        "limit_seconds": limit,
        "skip_estimate_seconds": ESTIMATE_SLACK * limit,
        "total_seconds": time.perf_counter() - start,
        "results": results,
    }, sys.stdout, indent=1)
    print()
