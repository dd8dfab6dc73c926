#!/usr/bin/env python3
"""make_fx on torchvision's resnet50: the time to capture a
forward and a training step (forward, sum, torch.autograd.grad over the
parameters), beside one eager run of the same code; the Python side of
bench/run_capture_bench.sh (capture_bench.cpp is the fxcpp side).

    fx_capture_bench.py [--runs N] [--batch B] [--threads T]
"""
import argparse
import json
import sys
import time

import torch
import torchvision.models as tvm
from torch.fx.experimental.proxy_tensor import make_fx


def time_runs(name, runs, body):
    for _ in range(2):
        body()
    ms = []
    for i in range(runs):
        start = time.perf_counter()
        body()
        ms.append((time.perf_counter() - start) * 1e3)
        print(f"\r{name:<24} {i + 1:3d}/{runs}", end="", file=sys.stderr)
    print(file=sys.stderr)
    ms.sort()
    return {"row": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "max_ms": ms[-1]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = tvm.resnet50()
    x = torch.rand(a.batch, 3, 224, 224)

    def forward(x):
        return model(x)

    def step(x):
        loss = model(x).sum()
        return loss, list(torch.autograd.grad(loss, list(model.parameters())))

    nodes = {}
    rows = []
    model.eval()
    rows.append(time_runs("eager_forward", a.runs, lambda: forward(x)))
    rows.append(time_runs("capture_forward", a.runs,
                          lambda: nodes.__setitem__("forward", len(make_fx(forward)(x).graph.nodes))))
    model.train()
    rows.append(time_runs("eager_step", a.runs, lambda: step(x)))
    rows.append(time_runs("capture_step", a.runs,
                          lambda: nodes.__setitem__("step", len(make_fx(step)(x).graph.nodes))))
    print(json.dumps({"side": "torch", "model": "resnet50", "batch": a.batch, "threads": torch.get_num_threads(),
                      "runs": a.runs, "forward_nodes": nodes["forward"], "step_nodes": nodes["step"],
                      "rows": rows}))


if __name__ == "__main__":
    main()
