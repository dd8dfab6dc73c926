#!/usr/bin/env python3
"""torch.fx 2.14's NormalizeArgs on the cases of normalize_args_test.cpp (the
same models and hand-built graphs, in Python): writes each result's graph and
code, or the exception raised, and whether src/ir/python_functions.inc
is what scripts/gen_python_functions.py makes of this torch, to the JSON file
named on the command line."""
import contextlib
import io
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))
sys.path.insert(0, os.path.join(HERE, '..', 'models'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))

try:
    import torch
    import torch.fx as fx
    import torch.nn.functional as F
    from torch.fx.experimental.normalize import NormalizeArgs, NormalizeOperators
    from torch.fx.experimental.schema_type_annotation import AnnotateTypesWithSchema
    import torchvision.models as tvm
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402


class Functional(torch.nn.Module):
    def forward(self, x, y):
        a = torch.add(x, y)
        b = torch.relu(a)
        c = F.relu(b)
        d = F.gelu(c)
        e = torch.flatten(d, 1)
        f = x + y
        g = torch.sum(e, 1)
        h = F.softmax(e, dim=-1)
        i = torch.cat([x, y], 0)
        j = F.dropout(i, 0.1)
        k = F.layer_norm(j, [4])
        m = torch.matmul(x, y)
        n = torch.clamp(m, min=0.0)
        o = F.linear(x, y)
        p = torch.transpose(o, 0, 1)
        q = F.max_pool2d(x.unsqueeze(0), 2)
        r = torch.softmax(p, 0)
        s = x.clamp(0.5)
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r, s


class Operators(torch.nn.Module):
    """The calls NormalizeOperators rewrites (and one with three arguments
    it leaves), modules and attributes AnnotateTypesWithSchema annotates."""
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))
        self.linear = torch.nn.Linear(4, 4)
        self.pool = torch.nn.MaxPool1d(2)

    def forward(self, x, y):
        a = torch.add(x, y)
        b = torch.mul(a, 2)
        c = torch.sub(b, y, alpha=2)
        d = torch.div(c, self.w)
        e = torch.floor_divide(d, 3)
        f = torch.remainder(e, 2)
        g = torch.eq(f, y)
        h = torch.ne(f, y)
        i = torch.lt(f, y)
        j = torch.le(f, y)
        k = torch.gt(f, y)
        m = torch.ge(f, y)
        n = torch.add(x, y, alpha=3)
        o = F.relu(self.linear(x))
        u = o.unsqueeze(0)
        p = F.max_pool1d(u, 2)
        q = self.pool(u)
        r = torch.relu(o)
        s = torch.clamp(r, 0.0, 1.0)
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r, s


def hand_built():
    """Calls with constant arguments, as the graph API can make them."""
    g = fx.Graph()
    x = g.placeholder('x')
    a = g.call_function(torch.add, (1, 2))
    b = g.call_function(torch.add, (x, 3.0))
    c = g.call_function(torch.add, (2.5, 1))
    d = g.call_function(torch.mul, (True, 3))
    e = g.call_function(torch.ops.aten.add.Tensor, (x, x), {'alpha': 2})
    f = g.call_function(torch.ops.aten.relu, (x,))
    g.output((a, b, c, d, e, f))
    return fx.GraphModule(torch.nn.Module(), g)


def bad(target, args):
    g = fx.Graph()
    x = g.placeholder('x')
    g.output(g.call_function(target, tuple(x if a == 'x' else a for a in args)))
    return fx.GraphModule(torch.nn.Module(), g)


def bad_module():
    root = torch.nn.Module()
    root.linear = torch.nn.Linear(4, 4)
    g = fx.Graph()
    x = g.placeholder('x')
    g.output(g.call_module('linear', (x, x)))
    return fx.GraphModule(root, g)


def signatures_current():
    import gen_python_functions
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        gen_python_functions.main()
    with open(os.path.join(ROOT, 'src', 'ir', 'python_functions.inc')) as f:
        return out.getvalue() == f.read()


def return_types_current():
    import gen_python_return_types
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        gen_python_return_types.main()
    with open(os.path.join(ROOT, 'src', 'passes', 'python_return_types.inc')) as f:
        return out.getvalue() == f.read()


def main():
    from oracle import vit
    warnings.simplefilter('ignore')
    pairs = normalizations.normalizations(normalizations.functional_targets())
    out = {'signatures_current': signatures_current(), 'return_types_current': return_types_current()}

    def record(name, make):
        try:
            gm = make()
        except Exception as e:
            out[name] = {'raises': type(e).__name__ + ': ' + str(e)}
            return
        out[name] = {'graph': normalizations.apply(str(gm.graph), pairs),
                     'code': normalizations.apply(gm.code, pairs)}

    def traced(build):
        torch.manual_seed(0)
        return fx.symbolic_trace(build().eval())

    record('functional', lambda: NormalizeArgs(fx.symbolic_trace(Functional())).transform())
    record('functional_positional', lambda: NormalizeArgs(fx.symbolic_trace(Functional()), False).transform())
    record('resnet18', lambda: NormalizeArgs(traced(tvm.resnet18)).transform())
    record('resnet18_positional', lambda: NormalizeArgs(traced(tvm.resnet18), False).transform())
    record('mobilenet_v2', lambda: NormalizeArgs(traced(tvm.mobilenet_v2)).transform())
    record('vit', lambda: NormalizeArgs(traced(vit)).transform())
    record('hand_built', lambda: NormalizeArgs(hand_built()).transform())
    record('too_many', lambda: NormalizeArgs(bad(F.relu, ('x', False, 3))).transform())
    record('softmax_defaults', lambda: NormalizeArgs(bad(F.softmax, ('x',))).transform())
    record('bad_module', lambda: NormalizeArgs(bad_module()).transform())
    record('can_cast', lambda: NormalizeArgs(bad(torch.can_cast, (torch.int32, torch.int64))).transform())
    record('operators', lambda: NormalizeOperators(fx.symbolic_trace(Operators())).transform())
    record('operators_resnet18', lambda: NormalizeOperators(traced(tvm.resnet18)).transform())
    record('annotate_vit', lambda: AnnotateTypesWithSchema(traced(vit)).transform())
    record('annotate_no_modules',
           lambda: AnnotateTypesWithSchema(fx.symbolic_trace(Operators()), annotate_modules=False).transform())
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
