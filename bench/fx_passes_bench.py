#!/usr/bin/python3
"""The passes_bench workloads in torch.fx, for comparison with fxcpp.

Runs the workloads of bench/passes_bench.cpp with torch.fx's own passes on
the same graphs and prints the results as JSON on stdout; progress goes to
stderr.

    $FXCPP_PYTHON bench/fx_passes_bench.py [--limit SECONDS] [--sizes 10000,100000]

Workloads (N = number of call_function nodes; the graphs are built with the
names passed explicitly, which is linear in torch.fx, outside the timing):
  dce             N/2 chained add(prev, 1), each followed by an unused
                  mul(add, 2): graph.eliminate_dead_code() removes N/2 nodes
  cse             N/3 rounds of a = add(prev, 1); b = add(prev, 1);
                  prev = mul(a, b): CSEPass()(gm) merges every b into its a
                  (it returns a new GraphModule, code generated)
  replace_pattern N/2 rounds of add(prev, 1) then torch.relu:
                  replace_pattern(gm, relu(x + 1) -> sigmoid(x + 1)), N/2 matches
  split_module    N chained add(prev, 1), split into partitions of 1,000
                  nodes by a callback: split_module(gm, gm, callback)
  shape_prop      N chained add(prev, 1) on a 4x4 float tensor:
                  ShapeProp(gm).propagate(x)

Timing and size skipping as bench/fx_graph_bench.py: time.perf_counter
around the operation, gc disabled, minimum over runs; a workload stops going
up in N once a size took more than --limit seconds or is estimated to take
more than 1.5 x --limit.
"""

import argparse
import operator
import sys
import threading

import fxbench
import torch
import torch.fx
from torch.fx.passes.dialect.common.cse_pass import CSEPass
from torch.fx.passes.shape_prop import ShapeProp
from torch.fx.passes.split_module import split_module

SIZES = [10000, 100000]
WORKLOADS = ["dce", "cse", "replace_pattern", "split_module", "shape_prop"]
PARTITION = 1000


def name(base, i):
    return base if i == 0 else f"{base}_{i}"


def module(g):
    return torch.fx.GraphModule(torch.nn.Module(), g)


def chain(n):
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for i in range(n):
        prev = g.create_node("call_function", operator.add, (prev, 1), name=name("add", i))
    g.output(prev)
    return g


def w_dce(n):
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for i in range(n // 2):
        prev = g.create_node("call_function", operator.add, (prev, 1), name=name("add", i))
        g.create_node("call_function", operator.mul, (prev, 2), name=name("mul", i))
    g.output(prev)

    def timed(g):
        assert g.eliminate_dead_code()
        assert len(g.nodes) == n // 2 + 2
    return g, timed


def w_cse(n):
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for i in range(n // 3):
        a = g.create_node("call_function", operator.add, (prev, 1), name=name("add", 2 * i))
        b = g.create_node("call_function", operator.add, (prev, 1), name=name("add", 2 * i + 1))
        prev = g.create_node("call_function", operator.mul, (a, b), name=name("mul", i))
    g.output(prev)

    def timed(gm):
        result = CSEPass()(gm)
        assert result.modified and len(result.graph_module.graph.nodes) == 2 * (n // 3) + 2
        return result
    return module(g), timed


def pattern(x):
    return torch.relu(x + 1)


def replacement(x):
    return torch.sigmoid(x + 1)


def w_replace_pattern(n):
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    for i in range(n // 2):
        prev = g.create_node("call_function", operator.add, (prev, 1), name=name("add", i))
        prev = g.create_node("call_function", torch.relu, (prev,), name=name("relu", i))
    g.output(prev)

    def timed(gm):
        matches = torch.fx.replace_pattern(gm, pattern, replacement)
        assert len(matches) == n // 2
    return module(g), timed


def w_split_module(n):
    gm = module(chain(n))
    part = {node: i // PARTITION for i, node in enumerate(gm.graph.nodes)}

    def timed(gm):
        split = split_module(gm, gm, lambda node: part[node])
        assert len(list(split.children())) == (n + PARTITION) // PARTITION
        return split
    return gm, timed


def w_shape_prop(n):
    gm = module(chain(n))
    x = torch.rand(4, 4)

    def timed(gm):
        ShapeProp(gm).propagate(x)
        last = next(iter(reversed(gm.graph.nodes))).args[0]
        assert last.meta["tensor_meta"].shape == (4, 4)
    return gm, timed


SETUPS = {w: globals()["w_" + w] for w in WORKLOADS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=float, default=20.0)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    fxbench.run(args.workloads.split(","), [int(s) for s in args.sizes.split(",")], args.limit,
                lambda w, n: fxbench.measure(lambda: SETUPS[w](n)), width=16)


if __name__ == "__main__":
    # torch.fx 1.13's subgraph matcher checks each match with a recursive DFS
    # over everything downstream of it (fuser_utils.validate_partition): on a
    # chain of N nodes that recursion is N deep. Give it the room. (2.14's
    # validate_partition walks the same nodes without recursing.)
    sys.setrecursionlimit(10_000_000)
    threading.stack_size(1 << 30)
    t = threading.Thread(target=main)
    t.start()
    t.join()
