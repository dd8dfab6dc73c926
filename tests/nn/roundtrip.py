#!/usr/bin/env python3
"""Reads back with torch.load what fx::save_state_dict wrote (<name>.cpp.pt in
the directory named on the command line, after nn_test loaded <name>.pt):
the same keys in the same order and the same tensors as Python saved, and
Module.load_state_dict(strict=True) accepts it. torch.load runs with its
default, weights_only=True since torch 2.6, as a user's call would: fxcpp's
files name no global beyond what that allows."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
except ImportError:
    sys.exit(77)

from cases import CASES, build  # noqa: E402


def main():
    out_dir = sys.argv[1]
    failures = []
    for name in CASES:
        original = torch.load(os.path.join(out_dir, name + '.pt'))
        path = os.path.join(out_dir, name + '.cpp.pt')
        if not os.path.exists(path):
            failures.append(f'{name}: {path} is missing')
            continue
        saved = torch.load(path)
        if list(saved) != list(original):
            failures.append(f'{name}: keys {list(saved)} != {list(original)}')
            continue
        for k, v in original.items():
            if saved[k].dtype != v.dtype or not torch.equal(saved[k], v):
                failures.append(f'{name}: {k} differs')
        m = build(name)
        m.load_state_dict(saved, strict=True)
    for f in failures:
        print(f, file=sys.stderr)
    print(f'{len(CASES) - len(failures)}/{len(CASES)} state dicts read back')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
