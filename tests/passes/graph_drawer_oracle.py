#!/usr/bin/env python3
"""torch.fx 2.14's FxGraphDrawer (with pydot) on the models of passes_models.py:
the DOT text of get_dot_graph().to_string() before and after ShapeProp and
with each option. Writes JSON to argv[1]; exits 77 when torch or pydot is not
importable.

Normalization (tests/conformance/normalizations.py): a torch.nn.functional
function that torch implements as a torch._C._nn builtin is named by its
public name, in the label and in the colour's hash, since fxcpp knows the
target by that name."""
import json
import operator
import sys

try:
    import torch
    import torch.fx
    import pydot  # noqa: F401
    import torch.fx.node
    import torch.fx.passes.graph_drawer as graph_drawer
    from torch.fx.passes.graph_drawer import FxGraphDrawer
    from torch.fx.passes.shape_prop import ShapeProp
except ImportError:
    print('torch or pydot is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import passes_models  # noqa: E402


def normalize_qualified_names():
    renames = {old: new for old, new, _ in passes_models.pairs() if old.startswith('torch._C.')}
    original = torch.fx.node._get_qualified_name

    def qualified(f):
        name = original(f)
        return renames.get(name, name)

    torch.fx.node._get_qualified_name = qualified
    graph_drawer._get_qualified_name = qualified


# Node names that are DOT keywords: pydot quotes them, except graph/node/edge
# in a node's own statement.
KEYWORD_NAMES = ('node', 'strict', 'edge', 'digraph', 'subgraph')


def keywords_graph():
    """Placeholders named KEYWORD_NAMES, summed, and torch.cat of the sum and the first."""
    g = torch.fx.Graph()
    placeholders = [g.placeholder(n) for n in KEYWORD_NAMES]
    acc = placeholders[0]
    for p in placeholders[1:]:
        acc = g.call_function(operator.add, (acc, p))
    g.output(g.call_function(torch.cat, ([acc, placeholders[0]],), {'dim': 0}))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def dot(gm, name, **options):
    return FxGraphDrawer(gm, name, **options).get_dot_graph().to_string()


def main():
    normalize_qualified_names()
    out = {}
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(passes_models.Small())
    out['small'] = dot(gm, 'small')
    out['small_no_getattr_no_params'] = dot(gm, 'small', ignore_getattr=True, ignore_parameters_and_buffers=True)
    out['small_node_names'] = dot(gm, 'small', skip_node_names_in_args=False)
    out['keywords'] = dot(keywords_graph(), 'node')
    ShapeProp(gm).propagate(*passes_models.small_inputs())
    out['small_shapes'] = dot(gm, 'small')
    for name, (model, inputs) in passes_models.corpus().items():
        gm = torch.fx.symbolic_trace(model)
        ShapeProp(gm).propagate(*inputs)
        out[name] = {'dot': dot(gm, name), 'input_shapes': [list(x.shape) for x in inputs]}
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
