#!/usr/bin/env python3
"""torch.fx 2.14's ShapeProp on the models of passes_models.py: for each node,
the type of its value and the tensor metadata it recorded, and the shape-aware
print_tabular table of fxcpp built with tabulate from the same metadata. Writes
JSON to argv[1]; exits 77 when torch is not importable."""
import json
import sys

try:
    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata
    from tabulate import tabulate
except ImportError:
    print('torch is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import passes_models  # noqa: E402

FORMATS = [torch.contiguous_format, torch.channels_last, torch.channels_last_3d]


def type_name(t):
    return t.__qualname__ if t.__module__ == 'builtins' else f'{t.__module__}.{t.__qualname__}'


def meta_json(m):
    if isinstance(m, TensorMetadata):
        return {'shape': list(m.shape), 'dtype': str(m.dtype), 'requires_grad': m.requires_grad,
                'stride': list(m.stride), 'memory_format': None if m.memory_format is None else str(m.memory_format),
                'is_quantized': m.is_quantized, 'repr': repr(m)}
    if isinstance(m, (tuple, list)):
        return {'tuple' if isinstance(m, tuple) else 'list': [meta_json(x) for x in m]}
    return {'other': repr(m)}


def shapes(m, leaf):
    if isinstance(m, TensorMetadata):
        return leaf(m)
    if isinstance(m, tuple):
        inner = ', '.join(shapes(x, leaf) for x in m)
        return f'({inner},)' if len(m) == 1 else f'({inner})'
    if isinstance(m, list):
        return '[' + ', '.join(shapes(x, leaf) for x in m) + ']'
    return repr(m)


def run(model, inputs, pairs):
    import normalizations
    gm = torch.fx.symbolic_trace(model)
    # The formats each value is contiguous in (torch.fx 1.13's pick among
    # several depended on the iteration order of a Python set; 2.14 picks the
    # first in the order of FORMATS).
    formats = {}

    class Recording(ShapeProp):
        def run_node(self, n):
            result = super().run_node(n)
            tensors = []
            torch.fx.node.map_aggregate(result, lambda x: tensors.append(x) if isinstance(x, torch.Tensor) else x)
            formats[n.name] = [[str(f) for f in FORMATS if t.is_contiguous(memory_format=f)] for t in tensors]
            return result

    Recording(gm).propagate(*inputs)
    nodes = []
    rows = []
    for n in gm.graph.nodes:
        tm = n.meta.get('tensor_meta')
        nodes.append({'name': n.name, 'type': type_name(n.meta['type']),
                      'tensor_meta': None if tm is None else meta_json(tm), 'formats': formats.get(n.name)})
        target = n.target if isinstance(n.target, str) else n._pretty_print_target(n.target)
        shape = '' if tm is None else shapes(tm, lambda m: str(tuple(m.shape)))
        dtype = '' if tm is None else shapes(tm, lambda m: str(m.dtype))
        rows.append([n.op, n.name, target, n.args, n.kwargs, shape, dtype])
    table = tabulate(rows, headers=['opcode', 'name', 'target', 'args', 'kwargs', 'shape', 'dtype'])
    return {'graph': normalizations.apply(str(gm.graph), pairs), 'nodes': nodes,
            'tabular': normalizations.apply(table, pairs),
            'input_shapes': [list(x.shape) for x in inputs]}


def tensors():
    """_extract_tensor_metadata of tensors shape_prop_test.cpp builds the same way."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata as extract
    x = torch.arange(24.).reshape(2, 3, 2, 2)
    cases = {
        'contiguous': x,
        'channels_last': x.contiguous(memory_format=torch.channels_last),
        'channels_last_3d': torch.zeros(1, 2, 3, 2, 2).contiguous(memory_format=torch.channels_last_3d),
        'transposed': x.transpose(0, 1),
        'scalar_int': torch.tensor(7),
        'requires_grad_double': torch.ones(3, dtype=torch.float64, requires_grad=True),
        'per_tensor': torch.quantize_per_tensor(x, 0.5, 3, torch.quint8),
        'per_channel': torch.quantize_per_channel(x, torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64),
                                                  torch.tensor([0, 1, 2]), 1, torch.qint8),
    }
    return {k: repr(extract(v)) for k, v in cases.items()}


def main():
    pairs = passes_models.pairs()
    out = {'tensors': tensors()}
    torch.manual_seed(0)
    out['small'] = run(passes_models.Small(), passes_models.small_inputs(), pairs)
    for name, (model, inputs) in passes_models.corpus().items():
        out[name] = run(model, inputs, pairs)
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
