"""compile_models_bench's models in PyTorch: eager and torch.compile (Inductor, CPU).

    python3 bench/fx_compile_models_bench.py [--runs N] [--threads T] [--batches 1,8] [--models resnet50,...]

The same architectures as compile_models_bench.cpp, random weights, eval
mode, no grad: torchvision's resnet50, mobilenet_v2 and vit_b_16 on 224x224
images, and 12 torch.nn.TransformerEncoderLayers (768 wide, 12 heads, 3072
GELU feed-forward) on 128 tokens, post-norm (BERT-base-sized) and pre-norm
with a causal mask (GPT-2-small-sized). batch_first=False, as on the C++
side: PyTorch's fused "fast path" for the layer needs batch_first=True, so
both sides run the layer's operators. Prints one JSON object in
compile_models_bench's form. The first call's time is torch.compile's
compilation after torch._dynamo.reset(); Inductor's on-disk caches may
still hold the kernels of an earlier run.
"""
import argparse
import json
import sys
import time

import torch
import torchvision


class EncoderStack(torch.nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(768, 12, 3072, 0.0, "gelu", 1e-5 if norm_first else 1e-12,
                                             batch_first=False, norm_first=norm_first)
            for _ in range(12))

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x


def randomize_batch_norm_statistics(model):
    """As fx::models::randomize_batch_norm_statistics: away from a fresh BatchNorm's."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.normal_(0.0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model


def image(b):
    return [torch.randn(b, 3, 224, 224)]


def models():
    causal = torch.full((128, 128), float("-inf")).triu(1)
    return [
        ("resnet50", lambda: randomize_batch_norm_statistics(torchvision.models.resnet50()), image),
        ("mobilenet_v2", lambda: randomize_batch_norm_statistics(torchvision.models.mobilenet_v2()), image),
        ("vit_b_16", torchvision.models.vit_b_16, image),
        ("bert_base_encoder", lambda: EncoderStack(False), lambda b: [torch.randn(128, b, 768)]),
        ("gpt2_small_decoder", lambda: EncoderStack(True), lambda b: [torch.randn(128, b, 768), causal]),
    ]


def time_alternating(name, runs, eager, compiled):
    """One untimed call of each, then `runs` timed calls of each in turn (as compile_models_bench)."""
    eager()
    compiled()
    ms = {"eager": [], "compiled": []}
    for i in range(runs):
        for row, forward in (("eager", eager), ("compiled", compiled)):
            t0 = time.perf_counter()
            forward()
            ms[row].append((time.perf_counter() - t0) * 1e3)
        print(f"\r{name:28s} {i + 1:3d}/{runs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rows = []
    for row, v in ms.items():
        v.sort()
        rows.append({"row": row, "median_ms": v[len(v) // 2], "min_ms": v[0], "max_ms": v[-1]})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    names = [n for n in args.models.split(",") if n]
    programs = []
    with torch.no_grad():
        for name, build, make_inputs in models():
            if names and name not in names:
                continue
            model = build().eval()
            for batch in (int(b) for b in args.batches.split(",")):
                inputs = make_inputs(batch)
                torch._dynamo.reset()
                compiled = torch.compile(model)
                t0 = time.perf_counter()
                got = compiled(*inputs)
                first_ms = (time.perf_counter() - t0) * 1e3
                want = model(*inputs)
                assert torch.allclose(got, want, rtol=1e-3, atol=1e-4), (name, (got - want).abs().max())
                rows = time_alternating(name, args.runs, lambda: model(*inputs), lambda: compiled(*inputs))
                programs.append({"program": name, "batch": batch, "first_call_ms": first_ms, "rows": rows})
                print(f"{name} batch {batch}: done", file=sys.stderr)
    print(json.dumps({"side": "torch", "threads": torch.get_num_threads(), "runs": args.runs,
                      "programs": programs}))


if __name__ == "__main__":
    main()
