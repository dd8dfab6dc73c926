"""compile_bench's programs in PyTorch: eager and torch.compile (Inductor, CPU).

    python3 bench/fx_compile_bench.py [--runs N] [--threads T]

Prints one JSON object in compile_bench's form. The first call's time is
torch.compile's compilation (its caches are cleared first).
"""
import argparse
import json
import sys
import time

import torch


def tiny_chain(x):
    prev = x
    for _ in range(100):
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


def chain(x, b):
    return torch.sigmoid(torch.relu(x * b + 1.0)) * x - 0.5


def time_runs(name, runs, body):
    for _ in range(3):
        body()
    ms = []
    for i in range(runs):
        t0 = time.perf_counter()
        body()
        ms.append((time.perf_counter() - t0) * 1e3)
        print(f"\r{name:28s} {i + 1:3d}/{runs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    ms.sort()
    return {"row": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "max_ms": ms[-1]}


def first_call_ms(body):
    t0 = time.perf_counter()
    body()
    return (time.perf_counter() - t0) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch._dynamo.reset()
    torch.manual_seed(0)
    programs = []
    with torch.no_grad():
        small = torch.rand(4, 4) * 2 - 1
        compiled = torch.compile(tiny_chain)
        first = first_call_ms(lambda: compiled(small))
        assert torch.allclose(compiled(small), tiny_chain(small), rtol=1e-5, atol=1e-6)
        programs.append({"program": "1,000-op chain [4, 4]", "first_call_ms": first,
                         "rows": [time_runs("eager", args.runs, lambda: tiny_chain(small)),
                                  time_runs("compiled", args.runs, lambda: compiled(small))]})

        x, b = torch.randn(1024, 1024), torch.randn(1024)
        compiled = torch.compile(chain)
        first = first_call_ms(lambda: compiled(x, b))
        assert torch.allclose(compiled(x, b), chain(x, b), rtol=1e-5, atol=1e-6)
        programs.append({"program": "pointwise chain [1024, 1024]", "first_call_ms": first,
                         "rows": [time_runs("eager", args.runs, lambda: chain(x, b)),
                                  time_runs("compiled", args.runs, lambda: compiled(x, b))]})

        scores = torch.randn(8 * 128, 128)
        softmax = lambda s: torch.softmax(s / 8.0, -1)
        compiled = torch.compile(softmax)
        first = first_call_ms(lambda: compiled(scores))
        assert torch.allclose(compiled(scores), softmax(scores), rtol=1e-5, atol=1e-6)
        programs.append({"program": "softmax(x / 8) [1024, 128]", "first_call_ms": first,
                         "rows": [time_runs("eager", args.runs, lambda: softmax(scores)),
                                  time_runs("compiled", args.runs, lambda: compiled(scores))]})

        norm = torch.nn.LayerNorm(768)
        hidden = torch.randn(512, 768)
        compiled = torch.compile(norm)
        first = first_call_ms(lambda: compiled(hidden))
        assert torch.allclose(compiled(hidden), norm(hidden), rtol=1e-4, atol=1e-5)
        programs.append({"program": "LayerNorm(768) [512, 768]", "first_call_ms": first,
                         "rows": [time_runs("eager", args.runs, lambda: norm(hidden)),
                                  time_runs("compiled", args.runs, lambda: compiled(hidden))]})

        mlp = torch.nn.Sequential(torch.nn.Linear(768, 3072), torch.nn.GELU(), torch.nn.Linear(3072, 768))
        tokens = torch.randn(128, 768)
        compiled = torch.compile(mlp)
        first = first_call_ms(lambda: compiled(tokens))
        assert torch.allclose(compiled(tokens), mlp(tokens), rtol=1e-4, atol=1e-5)
        programs.append({"program": "MLP block 128x768 -> 3072 -> 768", "first_call_ms": first,
                         "rows": [time_runs("eager", args.runs, lambda: mlp(tokens)),
                                  time_runs("compiled", args.runs, lambda: compiled(tokens))]})
    print(json.dumps({"side": "torch", "threads": torch.get_num_threads(), "runs": args.runs, "programs": programs}))


if __name__ == "__main__":
    main()
