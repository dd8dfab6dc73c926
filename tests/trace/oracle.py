#!/usr/bin/env python3
"""Traces the models of models.py and translations.py with torch.fx 2.14 and
writes their graph text and code (normalized as
tests/conformance/normalizations.py says) to the JSON file named on the
command line. For each translation it also writes, beside that file, its
state dict (<name>.state.pt), an input (<name>.in.pt) and the tensors of its
output, flattened as torch.utils._pytree does (<name>.out.pt)."""
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
from translations import TRANSLATIONS  # noqa: E402


def transformed(pairs):
    """The GraphModule each TRANSFORMS entry's Transformer makes of symbolic_trace(model)."""
    out = {}
    for name, (cls, transformer_cls) in TRANSFORMS.items():
        torch.manual_seed(0)
        gm = transformer_cls(torch.fx.symbolic_trace(cls())).transform()
        out[name] = {key: normalizations.apply(text, pairs)
                     for key, text in (('graph', str(gm.graph)), ('code', gm.code), ('str', str(gm)))}
    return out


def translations(pairs, where):
    """Graph text and code of each translation's Python original; its weights, input and outputs as files."""
    out = {}
    for name, (cls, inputs, tracer_cls) in TRANSLATIONS.items():
        torch.manual_seed(0)
        model = cls().eval()
        graph = (tracer_cls or torch.fx.Tracer)().trace(model)
        gm = torch.fx.GraphModule(model, graph, cls.__name__)
        out[name] = {key: normalizations.apply(text, pairs)
                     for key, text in (('graph', str(gm.graph)), ('code', gm.code), ('str', str(gm)))}
        x = inputs()
        with torch.no_grad():
            leaves = torch.utils._pytree.tree_leaves(model(*x))
        torch.save(model.state_dict(), os.path.join(where, name + '.state.pt'))
        torch.save(x, os.path.join(where, name + '.in.pt'))
        torch.save([t for t in leaves if isinstance(t, torch.Tensor)], os.path.join(where, name + '.out.pt'))
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
    out['translations'] = translations(pairs, os.path.dirname(os.path.abspath(sys.argv[1])))
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
