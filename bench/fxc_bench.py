"""fxc run latency beside PyTorch eager, and file load time beside torch.load.

    bench/fxc_bench.py FXC [--runs 30] [--threads 2] [--models resnet18,resnet50] [--batches 1,8]

For each torchvision model (random weights, eval mode) it writes a GraphModule
file with python3 -m fxcpp's writer, then in one run:
  - `fxc bench` on it: the median latency of forward over --runs runs after
    warm-up, loading excluded, and the time fx::load took;
  - PyTorch eager in this process on the same weights and input, timed the
    same way (torch.no_grad, same thread count);
  - torch.load of the same file (the tensors alone) and torch.fx loading it
    whole (fxcpp.format.load).
Prints a markdown table of the medians and their ratios.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python'))

import torch  # noqa: E402
import torch.fx  # noqa: E402
import torchvision  # noqa: E402
from fxcpp import format as fxfile  # noqa: E402


def median_ms(fn, runs, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('fxc')
    parser.add_argument('--runs', type=int, default=30)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--models', default='resnet18,resnet50')
    parser.add_argument('--batches', default='1,8')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(','):
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)().eval()
            path = os.path.join(tmp, name + '.fxg')
            fxfile.save(torch.fx.symbolic_trace(model), path)
            load_torch = median_ms(lambda: torch.load(path), 5, warmup=1)
            load_fx_py = median_ms(lambda: fxfile.load(path), 5, warmup=1)
            for batch in (int(b) for b in args.batches.split(',')):
                x = torch.randn(batch, 3, 224, 224)
                inputs = os.path.join(tmp, 'in.pt')
                torch.save([x], inputs)
                out = subprocess.run([args.fxc, 'bench', path, '--inputs', inputs, '-n', str(args.runs),
                                      '--threads', str(args.threads)], capture_output=True, text=True, check=True)
                m = re.search(r'median ([\d.]+) ms.*load ([\d.]+) ms', out.stdout)
                fxc_ms, fxc_load = float(m.group(1)), float(m.group(2))
                with torch.no_grad():
                    eager_ms = median_ms(lambda: model(x), args.runs)
                rows.append((name, batch, fxc_ms, eager_ms, fxc_load, load_torch, load_fx_py))
                print(f'{name} batch {batch}: fxc {fxc_ms:.1f} ms, eager {eager_ms:.1f} ms', file=sys.stderr)
    print(f'{args.threads} threads, median of {args.runs} runs\n')
    print('| model | batch | fxc run | PyTorch eager | eager / fxc | fx::load | torch.load (tensors) '
          '| fxcpp.format.load (Python) |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    for name, batch, fxc_ms, eager_ms, fxc_load, load_torch, load_fx_py in rows:
        print(f'| {name} | {batch} | {fxc_ms:.1f} ms | {eager_ms:.1f} ms | {eager_ms / fxc_ms:.2f}x '
              f'| {fxc_load:.0f} ms | {load_torch:.0f} ms | {load_fx_py:.0f} ms |')


if __name__ == '__main__':
    main()
