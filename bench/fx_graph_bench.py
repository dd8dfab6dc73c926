#!/usr/bin/python3
"""The graph_bench workloads in torch.fx, for comparison with fxcpp.

Runs the workloads of bench/graph_bench.cpp with the torch.fx.Graph API
directly (operator.add targets, the same graph shapes) and prints the results
as JSON on stdout; progress goes to stderr.

    $FXCPP_PYTHON bench/fx_graph_bench.py [--limit SECONDS] [--sizes 1000,10000,...]

Workloads (N = number of call_function nodes):
  build               placeholder x, N chained operator.add(prev, 1), output
  iterate             walk g.nodes of a prebuilt chain, touching each node's op
  python_code         g.python_code('self').src of a prebuilt chain
  build_python_code   build + python_code
  replace_all_uses    x used by N nodes add(x, i): x.replace_all_uses_with(y)
  eliminate_dead_code N dead nodes add(x, i), output returns x: DCE only
  graph_copy          copy a prebuilt chain into a new Graph with a value map

build and build_python_code use torch.fx's default naming (add, add_1, ...),
which was quadratic in 1.13 when many nodes share a base name (2.x keeps a
count per base name). The inputs of
the other workloads are prebuilt outside the timed region with the same
names passed explicitly, which gives the identical graph in linear time
(checked at start-up).

Timing: time.perf_counter around the operation only, with the garbage
collector disabled while building the inputs and timing (as timeit does); each size is repeated
until it has run at least 3 times and 0.5 s, at most 20 times, or once
when a run takes more than 2 s; the minimum is reported (the figure most
favourable to torch.fx). A workload stops going up in N once a size took
more than --limit seconds (20), or when the next size is estimated to take
more than 1.5 x --limit (the growth exponent measured on the last two sizes,
at least 1, extrapolated).
"""

import argparse
import gc
import operator
import time

import fxbench
import torch.fx

SIZES = [1000, 10000, 100000, 1000000]
WORKLOADS = ["build", "iterate", "python_code", "build_python_code",
             "replace_all_uses", "eliminate_dead_code", "graph_copy"]


log = fxbench.log


# ---- graphs -------------------------------------------------------------------

def build_chain(n):
    """x -> add -> add_1 -> ... -> output, with torch.fx's default naming."""
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for _ in range(n):
        prev = g.call_function(operator.add, (prev, 1))
    g.output(prev)
    return g


def default_name(i):
    return "add" if i == 0 else f"add_{i}"


def prebuilt_chain(n):
    """The graph build_chain(n) makes, built in linear time: the default names
    are passed explicitly, so the namespace never probes."""
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for i in range(n):
        prev = g.create_node("call_function", operator.add, (prev, 1), name=default_name(i))
    g.output(prev)
    return g


def fan_out(n):
    """x, y; add(x, 0), ..., add_{n-1}(x, n-1); output(last). Returns (g, x, y)."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    last = x
    for i in range(n):
        last = g.create_node("call_function", operator.add, (x, i), name=default_name(i))
    g.output(last)
    return g, x, y


def dead(n):
    """x; add(x, 0), ..., add_{n-1}(x, n-1); output(x): every add is dead."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    for i in range(n):
        g.create_node("call_function", operator.add, (x, i), name=default_name(i))
    g.output(x)
    return g


def self_check():
    """The explicitly named builders give exactly the default-named graphs."""
    n = 300
    assert prebuilt_chain(n).python_code("self").src == build_chain(n).python_code("self").src
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.placeholder("y")
    last = x
    for i in range(n):
        last = g.call_function(operator.add, (x, i))
    g.output(last)
    assert fan_out(n)[0].python_code("self").src == g.python_code("self").src
    g = torch.fx.Graph()
    x = g.placeholder("x")
    for i in range(n):
        g.call_function(operator.add, (x, i))
    g.output(x)
    assert dead(n).python_code("self").src == g.python_code("self").src


# ---- workloads: each is (setup(n, shared) -> state, timed(state)) ---------------

class Shared:
    """The prebuilt chain of one size, shared by the workloads that only read it."""

    def __init__(self, n):
        self.n = n
        self._chain = None

    def chain(self):
        if self._chain is None:
            t0 = time.perf_counter()
            enabled = gc.isenabled()
            gc.disable()
            self._chain = prebuilt_chain(self.n)
            if enabled:
                gc.enable()
            gc.collect()
            gc.freeze()  # keep collections from re-scanning it
            log(f"  (prebuilt chain of {self.n} in {time.perf_counter() - t0:.2f} s)")
        return self._chain

    def release(self):
        if self._chain is not None:
            self._chain = None
            gc.unfreeze()
            gc.collect()


def w_build(n, shared):
    def timed(_):
        g = build_chain(n)
        assert len(g.nodes) == n + 2
        return g
    return None, timed


def w_iterate(n, shared):
    g = shared.chain()

    def timed(g):
        s = 0
        for node in g.nodes:
            s += node.op == "call_function"
        assert s == n
    return g, timed


def w_python_code(n, shared):
    g = shared.chain()

    def timed(g):
        return g.python_code("self").src
    return g, timed


def w_build_python_code(n, shared):
    def timed(_):
        return build_chain(n).python_code("self").src
    return None, timed


def w_replace_all_uses(n, shared):
    def timed(state):
        g, x, y = state
        changed = x.replace_all_uses_with(y)
        assert len(changed) == n and not x.users
    return fan_out(n), timed


def w_eliminate_dead_code(n, shared):
    def timed(g):
        assert g.eliminate_dead_code()
        assert len(g.nodes) == 2
    return dead(n), timed


def w_graph_copy(n, shared):
    def timed(src):
        dst = torch.fx.Graph()
        val_map = {}
        out = dst.graph_copy(src, val_map)
        dst.output(out)
        assert len(dst.nodes) == n + 2
        return dst
    return shared.chain(), timed


SETUPS = {name: globals()["w_" + name] for name in WORKLOADS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=float, default=20.0,
                    help="stop a workload once a size took (or would take) more than this (s)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    self_check()
    shared = [Shared(0)]  # the prebuilt chain of the size being measured

    def measure_at(w, n):
        if shared[0].n != n:
            shared[0].release()
            shared[0] = Shared(n)
        return fxbench.measure(lambda: SETUPS[w](n, shared[0]))
    fxbench.run(args.workloads.split(","), [int(s) for s in args.sizes.split(",")], args.limit, measure_at)


if __name__ == "__main__":
    main()
