"""The Python side of the Conv+BatchNorm folding benchmark (see
fuse_bench.cpp): torchvision's resnet50 in eval mode with the weights
fuse_bench saved, one forward timed run after run for PyTorch eager, the
torch.fx GraphModule (symbolic_trace) and torch.fx's
torch.fx.experimental.optimization.fuse. Prints one JSON object like
fuse_bench's.

    $FXCPP_PYTHON bench/fx_fuse_bench.py WEIGHTS.pt [--runs N] [--batch B] [--threads T]
"""

import argparse
import json
import sys
import time

import torch
import torch.fx
import torchvision
from torch.fx.experimental.optimization import fuse


def time_forward(name, runs, forward):
    for _ in range(3):
        forward()
    ms = []
    for i in range(runs):
        t0 = time.perf_counter()
        forward()
        ms.append((time.perf_counter() - t0) * 1e3)
        print(f"\r{name:28s} {i + 1:3d}/{runs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    ms.sort()
    return {"row": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "max_ms": ms[-1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weights")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()

    model = torchvision.models.resnet50()
    model.load_state_dict(torch.load(args.weights))
    model.eval()
    traced = torch.fx.symbolic_trace(model)
    fused = fuse(model)
    x = torch.rand(args.batch, 3, 224, 224)
    with torch.no_grad():
        if not torch.allclose(fused(x), model(x), rtol=1e-3, atol=1e-3):
            sys.exit("fx_fuse_bench: the fused model's output differs from the model's")
        rows = [time_forward("eager", args.runs, lambda: model(x)),
                time_forward("graph_module", args.runs, lambda: traced(x)),
                time_forward("fused", args.runs, lambda: fused(x))]
    print(json.dumps({"side": "torch", "model": "resnet50", "batch": args.batch, "threads": args.threads,
                      "runs": args.runs, "rows": rows}))


if __name__ == "__main__":
    main()
