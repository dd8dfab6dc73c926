#!/usr/bin/env python3
"""fxcpp.modules on torch.nn 2.14: every module of module_specs.roots() constructed
from its description has the same repr and state dict keys and shapes, and
modules fxcpp does not know are refused by name."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import torch.nn as nn
except ImportError:
    print('torch is not importable; skipping', file=sys.stderr)
    sys.exit(77)

from module_specs import rebuild, roots  # noqa: E402
from fxcpp.modules import construct, describe  # noqa: E402
from models import AllModules  # noqa: E402


def shapes(m):
    return [(k, tuple(v.shape)) for k, v in m.state_dict().items()]


def raises_naming(fn, *words):
    try:
        fn()
    except (ValueError, TypeError) as e:
        missing = [w for w in words if w not in str(e)]
        return [f'message {str(e)!r} lacks {missing}'] if missing else []
    return [f'no error for {words}']


def main():
    failures = []
    for name, modules in roots().items():
        for path, m in modules:
            made = rebuild(m)
            if repr(made) != repr(m):
                failures.append(f'{name} {path}: repr\n{made!r}\nis not\n{m!r}')
            if shapes(made) != shapes(m):
                failures.append(f'{name} {path}: state dict {shapes(made)} is not {shapes(m)}')
    # torch 2.x's bias flags, which fx::nn does not have (so no case of module_specs.py
    # holds them): Python alone describes and rebuilds them.
    for m in (nn.LayerNorm(4, bias=False), nn.BatchNorm2d(3, bias=False), nn.GroupNorm(2, 4, bias=False),
              nn.InstanceNorm2d(3, affine=True, bias=False), nn.TransformerEncoderLayer(8, 2, 16, bias=False)):
        made = rebuild(m)
        if describe(m)[1]['bias'] is not False or repr(made) != repr(m) or shapes(made) != shapes(m):
            failures.append(f'bias=False: {describe(m)} rebuilds as\n{made!r}\nnot\n{m!r}')
    failures += raises_naming(lambda: describe(AllModules()), 'AllModules')
    failures += raises_naming(lambda: describe(nn.PReLU()), 'torch.nn.PReLU')
    failures += raises_naming(lambda: describe(nn.TransformerEncoderLayer(8, 2, activation=nn.GELU())),
                              'TransformerEncoderLayer', 'activation')
    holder = nn.Module()
    holder.register_buffer('scale', torch.ones(2))
    failures += raises_naming(lambda: describe(holder), 'torch.nn.Module')
    failures += raises_naming(lambda: construct('torch.nn.PReLU', {}), 'torch.nn.PReLU')
    failures += raises_naming(lambda: construct('torch.nn.Linear', {'in_features': 2, 'out_feature': 3}),
                              'out_feature')
    for f in failures:
        print('FAIL', f)
    print(f'{len(failures)} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
