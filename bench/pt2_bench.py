"""torch.export programs (.pt2): fxcpp's loading and running beside torch's.

    bench/pt2_bench.py FXC [--runs 30] [--threads 2] [--models resnet18,mobilenet_v3_small,transformers.bert]

For each model of tests/pt2/pt2_corpus.py it exports and saves the program,
then in one run:
  - `fxc bench` on the .pt2: fx::load_exported's time, and the median of
    ExportedProgram::run over --runs runs after warm-up (torch.no_grad);
  - torch.export.load of the same file, ep.module() (what a Python user runs),
    and the median of ep.module()(*inputs), timed the same way, with the same
    thread count.
Prints a markdown table of the medians and their ratios.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'pt2'))

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402
from fxc_bench import median_ms  # noqa: E402
from pt2_corpus import MODELS, Tuples  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('fxc')
    parser.add_argument('--runs', type=int, default=30)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--models', default='resnet18,mobilenet_v3_small,transformers.bert')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(','):
            torch.manual_seed(0)
            model, inputs = MODELS[name]()
            model = model.eval()
            if hasattr(model, 'config'):
                model = Tuples(model)
            with torch.no_grad():
                ep = torch.export.export(model, inputs)
            path = os.path.join(work, name + '.pt2')
            torch.export.save(ep, path)
            torch.save(pytree.tree_leaves(inputs), os.path.join(work, 'in.pt'))
            out = subprocess.run([args.fxc, 'bench', path, '--inputs', os.path.join(work, 'in.pt'), '-n',
                                  str(args.runs), '--threads', str(args.threads)],
                                 capture_output=True, text=True, check=True).stdout
            fx_run = float(re.search(r'median ([0-9.]+) ms', out).group(1))
            fx_load = float(re.search(r'load ([0-9.]+) ms', out).group(1))
            t0 = time.perf_counter()
            loaded = torch.export.load(path)
            module = loaded.module()
            py_load = (time.perf_counter() - t0) * 1e3
            with torch.no_grad():
                py_run = median_ms(lambda: module(*inputs), args.runs)
            rows.append((name, len(ep.graph.nodes), fx_load, py_load, fx_run, py_run))
    print(f'{args.threads} threads, median of {args.runs} runs after warm-up; load is one load, in a warm process')
    print()
    print('| model | nodes | fx::load_exported | torch.export.load + module() | ratio | fxcpp run | ep.module() run | ratio |')
    print('|---|---|---|---|---|---|---|---|')
    for name, nodes, fl, pl, fr, pr in rows:
        print(f'| {name} | {nodes} | {fl:.1f} ms | {pl:.1f} ms | {pl / fl:.1f}x | {fr:.2f} ms | {pr:.2f} ms | '
              f'{pr / fr:.2f}x |')


if __name__ == '__main__':
    main()
