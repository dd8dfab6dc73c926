#!/usr/bin/python3
"""The exec_bench workloads in torch.fx and TorchScript, for comparison with fxcpp.

Prints JSON on stdout (progress on stderr):

    $FXCPP_PYTHON bench/fx_exec_bench.py [--repeats R] [--workloads a,b,...]

Execution (N = 1000 tiny ops on a 4x4 float tensor, the chain of
bench/exec_bench.cpp built with the torch.fx.Graph API, the same targets):
  exec_torchfx       torch.fx.GraphModule(root, graph)(x)
  exec_torchscript   torch.jit.script of that GraphModule, warmed up (the
                     profiling executor optimizes after the first runs)
  exec_python        the same chain written by hand in Python (eager)
Tracing (N = 1000 and 10000 layers of Linear(8, 8) + ReLU in an nn.Sequential):
  trace_mlp          torch.fx.Tracer().trace(model)
  symbolic_trace_mlp torch.fx.symbolic_trace(model): graph + GraphModule
and torchvision's resnet50 (N = 1):
  trace_resnet50, symbolic_trace_resnet50
and a chain x + c_i over N = 1000 tensors that are not attributes of the
model, which tracing names `_tensor_constant0` ... on a fresh model each run:
  symbolic_trace_constants

Timing: time.perf_counter (wall) and time.thread_time (CPU), garbage collector disabled while timing (as
timeit does). An execution run times a loop of calls lasting about 0.1 s
and divides; a tracing run times one call. Each workload runs R times
(default 15 for execution, 5 for tracing) after one untimed warm-up run;
the medians of both are reported.
"""

import argparse
import gc
import json
import operator
import platform
import statistics
import sys
import time

import torch
import torch.fx

EXEC_N = 1000
MLP_LAYERS = 10000
CONSTANTS = 1000


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- the execution chain -------------------------------------------------------

def build_exec_graph(n):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    prev = x
    for i in range(n):
        k = i % 10
        if k == 0:
            prev = g.call_function(torch.add, (prev, x))
        elif k == 1:
            prev = g.call_function(operator.mul, (prev, 0.5))
        elif k == 2:
            prev = g.call_function(torch.relu, (prev,))
        elif k == 3:
            prev = g.call_method("neg", (prev,))
        elif k == 4:
            prev = g.call_function(torch.sigmoid, (prev,))
        elif k == 5:
            prev = g.call_function(operator.add, (prev, x))
        elif k == 6:
            prev = g.call_method("mul", (prev, x))
        elif k == 7:
            prev = g.call_function(torch.neg, (prev,))
        elif k == 8:
            prev = g.call_method("relu", (prev,))
        else:
            prev = g.call_method("sigmoid", (prev,))
    g.output(prev)
    return g


def handwritten(x, n):
    prev = x
    for _ in range(n // 10):
        prev = torch.add(prev, x)
        prev = prev * 0.5
        prev = torch.relu(prev)
        prev = prev.neg()
        prev = torch.sigmoid(prev)
        prev = prev + x
        prev = prev.mul(x)
        prev = torch.neg(prev)
        prev = prev.relu()
        prev = prev.sigmoid()
    return prev


def exec_input():
    torch.manual_seed(0)
    return torch.rand(4, 4) * 2 - 1


# ---- the MLP ---------------------------------------------------------------------

def mlp(layers):
    mods = []
    for _ in range(layers):
        mods.append(torch.nn.Linear(8, 8))
        mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


class Constants(torch.nn.Module):
    """forward adds n tensors that are no attributes: each becomes a `_tensor_constantN` of the root."""

    def __init__(self, n):
        super().__init__()
        self.c = [torch.full((2,), float(i)) for i in range(n)]

    def forward(self, x):
        for t in self.c:
            x = x + t
        return x


# ---- timing ----------------------------------------------------------------------

def time_runs(fn, repeats, loop_seconds):
    """Median wall and CPU (this thread) seconds per call of fn over `repeats` runs."""
    fn()  # warm-up
    loops = 1
    if loop_seconds > 0:
        start = time.perf_counter()
        fn()
        one = max(time.perf_counter() - start, 1e-9)
        loops = max(1, int(loop_seconds / one))
    runs, cpu_runs = [], []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start, cpu_start = time.perf_counter(), time.thread_time()
            for _ in range(loops):
                fn()
            cpu_runs.append((time.thread_time() - cpu_start) / loops)
            runs.append((time.perf_counter() - start) / loops)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(runs), statistics.median(cpu_runs), runs, loops


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=0, help="runs per workload (default 15 exec, 5 trace)")
    p.add_argument("--workloads", default="exec_torchfx,exec_torchscript,exec_python,trace_mlp,symbolic_trace_mlp,"
                                          "trace_resnet50,symbolic_trace_resnet50,symbolic_trace_constants")
    args = p.parse_args()
    wanted = args.workloads.split(",")

    x = exec_input()
    gm = torch.fx.GraphModule(torch.nn.Module(), build_exec_graph(EXEC_N))
    expected = handwritten(x, EXEC_N)
    if not torch.equal(gm(x), expected):
        sys.exit("torch.fx GraphModule computed another result than the handwritten chain")

    results = []

    def record(workload, n, fn, loop_seconds, default_repeats):
        if workload not in wanted:
            return
        log(f"{workload} N={n}")
        median, cpu, runs, loops = time_runs(fn, args.repeats or default_repeats, loop_seconds)
        results.append({"workload": workload, "n": n, "seconds": median, "cpu_seconds": cpu, "runs": runs,
                        "loops": loops})
        log(f"  {median * 1e6:.1f} us wall, {cpu * 1e6:.1f} us cpu")

    record("exec_torchfx", EXEC_N, lambda: gm(x), 0.1, 15)
    if "exec_torchscript" in wanted:
        scripted = torch.jit.script(gm)
        for _ in range(5):  # the profiling executor specializes after a few runs
            scripted(x)
        if not torch.equal(scripted(x), expected):
            sys.exit("TorchScript computed another result than the handwritten chain")
        record("exec_torchscript", EXEC_N, lambda: scripted(x), 0.1, 15)
    record("exec_python", EXEC_N, lambda: handwritten(x, EXEC_N), 0.1, 15)

    for layers in (1000, MLP_LAYERS):
        if "trace_mlp" in wanted or "symbolic_trace_mlp" in wanted:
            model = mlp(layers)
            record("trace_mlp", layers, lambda: torch.fx.Tracer().trace(model), 0, 5)
            record("symbolic_trace_mlp", layers, lambda: torch.fx.symbolic_trace(model), 0, 5)
    if "trace_resnet50" in wanted or "symbolic_trace_resnet50" in wanted:
        import torchvision
        resnet = torchvision.models.resnet50()
        record("trace_resnet50", 1, lambda: torch.fx.Tracer().trace(resnet), 0, 9)
        record("symbolic_trace_resnet50", 1, lambda: torch.fx.symbolic_trace(resnet), 0, 9)
    if "symbolic_trace_constants" in wanted:
        fresh = iter([Constants(CONSTANTS) for _ in range((args.repeats or 5) + 1)])  # warm-up + runs
        record("symbolic_trace_constants", CONSTANTS, lambda: torch.fx.symbolic_trace(next(fresh)), 0, 5)

    print(json.dumps({
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "num_threads": torch.get_num_threads(),
        "timing": "median over runs, gc disabled while timing",
        "results": results,
    }, indent=1))


if __name__ == "__main__":
    main()
