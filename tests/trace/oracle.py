#!/usr/bin/env python3
"""Traces the models of models.py with torch.fx 2.14 and writes their graph
text and code (normalized as tests/conformance/normalizations.py says) to
the JSON file named on the command line."""
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
from models import CONCRETE_ARGS, MODELS  # noqa: E402
from models import TRANSFORMS  # noqa: E402


def transformed(pairs):
    """The GraphModule each TRANSFORMS entry's Transformer makes of symbolic_trace(model)."""
    out = {}
    for name, (cls, transformer_cls) in TRANSFORMS.items():
        torch.manual_seed(0)
        gm = transformer_cls(torch.fx.symbolic_trace(cls())).transform()
        out[name] = {key: normalizations.apply(text, pairs)
                     for key, text in (('graph', str(gm.graph)), ('code', gm.code), ('str', str(gm)))}
    return out


def main():
    pairs = normalizations.normalizations(normalizations.functional_targets())
    out = {}
    for name, (cls, tracer_cls) in MODELS.items():
        torch.manual_seed(0)
        model = cls()
        tracer = (tracer_cls or torch.fx.Tracer)()
        graph = tracer.trace(model, CONCRETE_ARGS.get(name))
        gm = torch.fx.GraphModule(tracer.root, graph, cls.__name__)  # as symbolic_trace names it
        out[name] = {
            'graph': normalizations.apply(str(gm.graph), pairs),
            'code': normalizations.apply(gm.code, pairs),
            'str': normalizations.apply(str(gm), pairs),
        }
    out.update(transformed(pairs))
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
