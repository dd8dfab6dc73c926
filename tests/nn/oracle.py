#!/usr/bin/env python3
"""Writes what torch.nn 2.14 does with the modules of cases.py, for nn_test.cpp:
into the directory named on the command line, per case <name>.pt (its state
dict, torch.save'd) and <name>.io.pt (inputs in.0, in.1.0, ... and outputs out,
out.0, ...), and expected.json (repr, state dict keys/shapes/dtypes, output
structure per case; graph and code of the traced AllModules model; the
constructor arguments of every module of module_specs.py, as fxcpp.modules
describes them)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))
sys.path.insert(0, HERE)

try:
    import torch
    import torch.fx
except ImportError:
    print('torch is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402
from cases import CASES, build, call, flatten, structure  # noqa: E402
from models import AllModules  # noqa: E402
from module_specs import TYPES, expected_specs  # noqa: E402


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    expected = {'cases': {}}
    for name, (_, inputs, kwargs) in CASES.items():
        m = build(name)
        sd = m.state_dict()
        torch.save(sd, os.path.join(out_dir, name + '.pt'))
        entry = {
            'repr': repr(m),
            'keys': [[k, list(v.shape), str(v.dtype)] for k, v in sd.items()],
        }
        if inputs is not None:
            torch.manual_seed(1)
            args = inputs()
            io = flatten(args, 'in', {})
            io = {k: v.clone() for k, v in io.items()}  # before an inplace module changes them
            with torch.no_grad():
                result = call(m, args, kwargs)
            flatten(result, 'out', io)
            entry['structure'] = structure(result)
            torch.save(io, os.path.join(out_dir, name + '.io.pt'))
        expected['cases'][name] = entry

    pairs = normalizations.normalizations(normalizations.functional_targets())
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(AllModules())
    expected['trace'] = {
        'graph': normalizations.apply(str(gm.graph), pairs),
        'code': normalizations.apply(gm.code, pairs),
    }
    expected['specs'] = expected_specs()
    expected['spec_types'] = list(TYPES)
    with open(os.path.join(out_dir, 'expected.json'), 'w') as f:
        json.dump(expected, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
