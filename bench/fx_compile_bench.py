"""compile_bench's programs in PyTorch: eager and torch.compile (Inductor, CPU).

    python3 bench/fx_compile_bench.py [--runs N] [--threads T]

Prints one JSON object in compile_bench's form. The first call's time is
torch.compile's compilation after torch._dynamo.reset(); Inductor's on-disk
caches may still hold the kernels of an earlier run. The first call at a
second size (the first input with a smaller first dimension) is Dynamo's
recompilation with that dimension dynamic (automatic dynamic shapes); at a
third size, that dynamic graph runs.
"""
import argparse
import json
import time

import torch

from fx_exec_bench import handwritten  # exec_bench's chain of tiny operators
from fx_fuse_bench import time_forward


def chain(x, b):
    return torch.sigmoid(torch.relu(x * b + 1.0)) * x - 0.5


def arithmetic10(x, b):
    t = torch.relu(x * b + 1.0) * 0.5 - x
    return torch.abs((t + x) * 2.0 - 1.0) * x


def chain10(x, b):
    t = torch.relu(x * b + 1.0) * 0.5 - x
    return torch.tanh((torch.sigmoid(t) + x) * 2.0 - 1.0)


def rms_norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def nll(logits, labels):
    return torch.nn.functional.nll_loss(torch.log_softmax(logits, -1), labels)


def mse(a, b):
    d = a - b
    return (d * d).mean()


def training_step(model):
    """The forward, the cross-entropy and loss.backward(): torch.compile compiles the forward and the
    backward (AOTAutograd), as fx::compile_training_step does."""
    def step(x, labels):
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        return loss
    return step


def forward_and_backward(model):
    """The cross-entropy of model(x) and loss.backward(), eager around `model`: the peer of fx::compile
    called on a module under autograd (torch.compile(model), whose backward AOTAutograd compiles)."""
    def step(x, labels):
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        return loss
    return step


def ten_inputs(*xs):
    y = xs[0]
    for i, x in enumerate(xs[1:], 1):
        y = y + x if i % 2 else y * x
    return y


def resized(inputs, i, batched):
    """The first `batched` inputs cut to (3 - i) / 4 of the first one's first dimension."""
    n = inputs[0].shape[0] * (3 - i) // 4
    return [x[:n].contiguous() if j < batched else x for j, x in enumerate(inputs)]


def first_call(name, compiled, eager, inputs, rtol, atol):
    t0 = time.perf_counter()
    compiled(*inputs)
    ms = (time.perf_counter() - t0) * 1e3
    assert torch.allclose(compiled(*inputs), eager(*inputs), rtol=rtol, atol=atol), name
    return ms


def program(name, runs, eager, inputs, rtol, atol, batched=1, compiled=None):
    """torch.compile of `eager` (or `compiled`): its first call, a check, both timed, then the first call at
    a second size."""
    compiled = compiled or torch.compile(eager)
    first_ms = first_call(name, compiled, eager, inputs, rtol, atol)
    rows = [time_forward("eager", runs, lambda: eager(*inputs)),
            time_forward("compiled", runs, lambda: compiled(*inputs))]
    ms = [first_call(name, compiled, eager, resized(inputs, i, batched), rtol, atol) for i in range(2)]
    return {"program": name, "first_call_ms": first_ms, "rows": rows,
            "second_size_first_call_ms": ms[0], "third_size_first_call_ms": ms[1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch._dynamo.reset()
    torch.manual_seed(0)
    with torch.no_grad():
        norm = torch.nn.LayerNorm(768)
        mlp = torch.nn.Sequential(torch.nn.Linear(768, 3072), torch.nn.GELU(), torch.nn.Linear(3072, 768))
        up = torch.nn.Sequential(torch.nn.Linear(768, 3072), torch.nn.GELU())
        conv_bn = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 1, bias=False), torch.nn.BatchNorm2d(64),
                                      torch.nn.ReLU()).eval()
        programs = [
            program("1,000-op chain [4, 4]", args.runs, lambda x: handwritten(x, 1000), [torch.rand(4, 4) * 2 - 1],
                    1e-5, 1e-6),
            program("10 inputs [4, 4], per-call overhead", args.runs, ten_inputs,
                    [torch.rand(4, 4) for _ in range(10)], 1e-5, 1e-6, batched=10),
            program("pointwise chain [1024, 1024]", args.runs, chain, [torch.randn(1024, 1024), torch.randn(1024)],
                    1e-5, 1e-6),
            program("softmax(x / 8) [1024, 128]", args.runs, lambda s: torch.softmax(s / 8.0, -1),
                    [torch.randn(8 * 128, 128)], 1e-5, 1e-6),
            program("masked softmax [8, 128, 128]", args.runs,
                    lambda s, m: torch.softmax(s.masked_fill(m, float("-inf")) / 8.0, -1),
                    [torch.randn(8, 128, 128), torch.ones(128, 128, dtype=torch.bool).triu(1)], 1e-5, 1e-6),
            program("LayerNorm(768) [512, 768]", args.runs, norm, [torch.randn(512, 768)], 1e-4, 1e-5),
            program("MLP block 128x768 -> 3072 -> 768", args.runs, mlp, [torch.randn(128, 768)], 1e-4, 1e-5),
            program("Conv1x1 + BatchNorm + ReLU [8, 64, 28, 28]", args.runs, conv_bn,
                    [torch.randn(8, 64, 28, 28)], 1e-4, 1e-5),
            program("10 arithmetic ops [4096, 1024], copy floor", args.runs, arithmetic10,
                    [torch.randn(4096, 1024), torch.randn(1024)], 1e-5, 1e-6),
            program("10 ops with sigmoid and tanh [4096, 1024], copy floor", args.runs, chain10,
                    [torch.randn(4096, 1024), torch.randn(1024)], 1e-5, 1e-6),
            program("RMSNorm(768) [512, 768]", args.runs, rms_norm, [torch.randn(512, 768), torch.randn(768)],
                    1e-4, 1e-5),
            program("gelu(x @ W + b) 128x768 -> 3072", args.runs, up, [torch.randn(128, 768)], 1e-4, 1e-5),
            program("log_softmax + nll_loss [512, 1000]", args.runs, nll,
                    [torch.randn(512, 1000), torch.randint(1000, (512,))], 1e-4, 1e-5, batched=2),
            program("log_softmax + nll_loss [2048, 32000]", args.runs, nll,
                    [torch.randn(2048, 32000), torch.randint(32000, (2048,))], 1e-4, 1e-5, batched=2),
            program("((a - b)^2).mean() [4096, 1024]", args.runs, mse,
                    [torch.randn(4096, 1024), torch.randn(4096, 1024)], 1e-4, 1e-5, batched=2),
        ]
    classifier = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.BatchNorm1d(1024), torch.nn.GELU(),
                                     torch.nn.Linear(1024, 1024), torch.nn.SiLU(), torch.nn.Linear(1024, 10))
    programs.append(program("training step: MLP classifier [256, 784]", args.runs, training_step(classifier),
                            [torch.randn(256, 784), torch.randint(10, (256,))], 1e-4, 1e-5, batched=2))
    compiled_classifier = torch.compile(classifier)
    programs.append(program("fx::compile(module) under autograd: MLP classifier [256, 784]", args.runs,
                            forward_and_backward(classifier), [torch.randn(256, 784), torch.randint(10, (256,))],
                            1e-4, 1e-5, batched=2, compiled=forward_and_backward(compiled_classifier)))
    print(json.dumps({"side": "torch", "threads": torch.get_num_threads(), "runs": args.runs, "programs": programs}))


if __name__ == "__main__":
    main()
