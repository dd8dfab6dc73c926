"""Every torchvision 0.29 classification model, through GraphModule files both ways.

    torchvision_corpus.py --fxc build/tools/fxc/fxc --work /tmp/corpus [--models fast|all|a,b] [--report FILE]

For each model (random weights, eval mode, a random image):
  1. torch.fx 2.14 traces it (a model it cannot trace is reported as such);
  2. python3 -m fxcpp's writer saves the GraphModule (Python -> file);
  3. `fxc show --graph` and `--code` print exactly torch.fx's text;
  4. `fxc run` gives outputs allclose to PyTorch eager on the same input;
  5. `fxc opt -p shape_prop` writes the module back from C++ with
     tensor_meta (C++ -> file), and torch.fx reads it with the same graph text.
The report is a markdown table, one row per model with the reason of any
failure. Exit code 1 when a model torch.fx traces fails a step.
"""
import argparse
import gc
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'python'))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    import torchvision
except ImportError as e:
    print(f'torchvision_corpus.py: {e}; skipping')
    sys.exit(77)

import normalizations  # noqa: E402
from fxcpp import format as fxfile  # noqa: E402

FAST = ['resnet18', 'mobilenet_v2', 'vit_b_16', 'swin_t', 'swin_v2_t']


def build(name):
    """The model and its input: 64x64 images where the model takes them (ViTs are built for 64x64,
    or 56x56 for patch size 14), 224x224 where it needs that size."""
    builder = getattr(torchvision.models, name)
    if name.startswith('vit_'):
        size = 56 if name == 'vit_h_14' else 64
        return builder(image_size=size), torch.randn(2, 3, size, size)
    if name.startswith('maxvit') or name.startswith('swin'):
        return builder(), torch.randn(1, 3, 224, 224)
    if name == 'inception_v3':
        return builder(init_weights=False, aux_logits=True), torch.randn(2, 3, 96, 96)
    if name == 'googlenet':
        return builder(init_weights=False), torch.randn(2, 3, 64, 64)
    return builder(), torch.randn(2, 3, 64, 64)


def first_line(text):
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return (lines[-1] if lines else '').strip()[:200]


class Step(Exception):
    pass


def fxc(args, *rest):
    p = subprocess.run([args.fxc, *rest], capture_output=True, text=True)
    if p.returncode != 0:
        raise Step(f'fxc {rest[0]}: {first_line(p.stderr)}')
    return p.stdout


def flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, 'logits'):  # InceptionOutputs / GoogLeNetOutputs in training mode
        return [out.logits]
    return list(out)


def check(args, name):
    torch.manual_seed(0)
    model, image = build(name)
    model.eval()
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as e:  # noqa: BLE001 - any tracing failure is the answer
        return {'traced': False, 'reason': f'torch.fx {torch.__version__} cannot trace it: ' + first_line(e)}
    base = os.path.join(args.work, name)
    row = {'traced': True, 'params': sum(p.numel() for p in model.parameters())}
    try:
        try:
            fxfile.save(gm, base + '.fxg')
        except ValueError as e:
            raise Step('no file form: ' + first_line(e))
        torch.save([image], base + '.in.pt')
        pairs = normalizations.normalizations([])
        if fxc(args, 'show', base + '.fxg', '--graph') != normalizations.apply(str(gm.graph), pairs) + '\n':
            raise Step('fxc show --graph differs from torch.fx')
        if fxc(args, 'show', base + '.fxg', '--code') != gm.code:
            raise Step('fxc show --code differs from torch.fx')
        t0 = time.perf_counter()
        fxc(args, 'run', base + '.fxg', '--inputs', base + '.in.pt', '--output', base + '.out.pt')
        row['run_s'] = time.perf_counter() - t0
        with torch.no_grad():
            expected = flat(model(image))
        got = torch.load(base + '.out.pt')
        if len(got) != len(expected) or not all(torch.allclose(a, b, rtol=1e-3, atol=1e-4)
                                                for a, b in zip(got, expected)):
            diff = max((a - b).abs().max().item() for a, b in zip(got, expected))
            raise Step(f'fxc run output differs from PyTorch eager (max abs diff {diff:.3g})')
        # shape_prop changes no node, only meta: the graph fxcpp writes must be torch.fx's.
        fxc(args, 'opt', base + '.fxg', '-p', 'shape_prop', '--inputs', base + '.in.pt', '-o', base + '.back.fxg')
        back = fxfile.load(base + '.back.fxg')
        if str(back.graph) != str(gm.graph):
            raise Step('the file written by fxcpp reads back into torch.fx with another graph')
        row['ok'] = True
    except Step as e:
        row['ok'] = False
        row['reason'] = str(e)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        row['ok'] = False
        row['reason'] = f'{type(e).__name__}: {first_line(e)}'
        traceback.print_exc()
    finally:
        for suffix in ('.fxg', '.back.fxg', '.in.pt', '.out.pt'):
            if os.path.exists(base + suffix):
                os.remove(base + suffix)
    return row


def report(rows, path):
    lines = [f'# torchvision {torchvision.__version__} through GraphModule files', '',
             'Generated by `tests/corpus/torchvision_corpus.py --models all` (see its docstring for the steps).',
             'Random weights, eval mode; outputs compared with `allclose(rtol=1e-3, atol=1e-4)`.', '',
             '| model | parameters | result | fxc run (s) | reason |', '|---|---:|---|---:|---|']
    for name, row in rows:
        if not row['traced']:
            lines.append(f'| {name} | | not traceable | | {row["reason"]} |')
            continue
        result = 'pass' if row['ok'] else 'FAIL'
        run_s = f'{row["run_s"]:.2f}' if 'run_s' in row else ''
        lines.append(f'| {name} | {row["params"]:,} | {result} | {run_s} | {row.get("reason", "")} |')
    passed = sum(1 for _, r in rows if r['traced'] and r['ok'])
    traced = sum(1 for _, r in rows if r['traced'])
    lines += ['', f'{passed} of {traced} traceable models pass; {len(rows) - traced} of {len(rows)} are not '
              f'traceable by torch.fx {torch.__version__}.', '']
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--fxc', required=True)
    parser.add_argument('--work', required=True)
    parser.add_argument('--models', default='fast')
    parser.add_argument('--report')
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.models == 'fast':
        names = FAST
    elif args.models == 'all':
        names = torchvision.models.list_models(module=torchvision.models)
    else:
        names = args.models.split(',')
    rows = []
    for name in names:
        t0 = time.perf_counter()
        row = check(args, name)
        rows.append((name, row))
        status = 'not traceable' if not row['traced'] else 'pass' if row['ok'] else 'FAIL'
        print(f'{name}: {status} ({time.perf_counter() - t0:.1f} s) {row.get("reason", "")}', flush=True)
        gc.collect()
    if args.report:
        report(rows, args.report)
    failed = [n for n, r in rows if r['traced'] and not r['ok']]
    print(f'{len(rows) - len(failed)} passed, {len(failed)} failed')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
