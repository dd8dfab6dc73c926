#!/usr/bin/env python3
"""torch.fx 2.14's split_module on the cases of split_module_test.cpp (the same
models, written in Python): writes, per case, the base module's graph and code,
each submodule's code and the qualname_map, or the exception it raises, to the
JSON file named on the command line."""
import json
import operator
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    from torch.fx.passes.split_module import split_module
    import torchvision.models as tvm
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402


class MyModule(torch.nn.Module):  # test_subgraph_creation
    def __init__(self):
        super().__init__()
        self.param = torch.nn.Parameter(torch.rand(3, 4))
        self.linear = torch.nn.Linear(4, 5)

    def forward(self, x, y):
        z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
        w = self.linear(y).clamp(min=0.0, max=1.0)
        return z + w


class ModWithDeadCode(torch.nn.Module):  # test_split_module_dead_code
    def forward(self, x):
        output = x * 2
        dead_line = x + 2  # noqa: F841
        return output


class ModelToTrace(torch.nn.Module):  # test_split_module_default_arg
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x, targets=None):
        x = self.lin(x)
        if targets is not None:
            x = x + targets
        return x


class Diamond(torch.nn.Module):
    def forward(self, x):
        a = torch.relu(x)
        b = torch.sigmoid(x)
        return a + b


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
        self.register_buffer('scale', torch.ones(4))

    def forward(self, x, k=2.0):
        y = self.seq(x) * self.scale
        z = torch.cat([y, x], dim=1)
        return z.sum(dim=-1) * k, y


class Interleaved(torch.nn.Module):  # a -> b -> c, with a and c in one partition: a cycle
    def forward(self, x):
        a = torch.relu(x)
        b = torch.sigmoid(a)
        return torch.tanh(b)


def counter(n):
    state = {'i': 0}

    def cb(node):
        p = state['i'] % n
        state['i'] += 1
        return p
    return cb


def dead_code_callback():
    state = {'saw_mul': False}

    def cb(n):
        if n.target == operator.mul:
            state['saw_mul'] = True
            return 1
        return 2 if state['saw_mul'] else 0
    return cb


def by_target(table):
    return lambda n: table[n.name]


def by_index(parts, count):
    state = {'i': 0}

    def cb(node):
        p = state['i'] * parts // count
        state['i'] += 1
        return p
    return cb


def calls(gm):
    return sum(1 for n in gm.graph.nodes if n.op in ('call_function', 'call_method', 'call_module'))


def cond_and_while_loop():
    """fx/models/cond_and_while_loop.h, captured: make_fx's torch.cond and
    torch.while_loop (the placeholder is arg0_1, as fx::capture names it).
    The operators are spelled as C++ calls them: `x * 2` is mul.Scalar in
    C++, and torch::zeros passes only the dtype."""
    from torch.fx.experimental.proxy_tensor import make_fx
    aten = torch.ops.aten

    def f(arg0):
        y = torch.cond(arg0.sum() > 0, lambda a: (aten.mul.Scalar(a.sin(), 2),),
                       lambda a: (aten.add.Scalar(a.cos(), 1),), (arg0,))[0]
        _, z = torch.while_loop(lambda i, c: i < 3, lambda i, c: (aten.add.Scalar(i, 1), aten.mul.Scalar(c, 2)),
                                (aten.zeros.default([], dtype=torch.long), y))
        return z
    return make_fx(f)(torch.randn(3, 4))


def at_cond_and_loop():
    """A new partition at the cond and at the while_loop."""
    state = {'part': 0}

    def cb(n):
        if n.name in ('cond', 'while_loop'):
            state['part'] += 1
        return state['part']
    return cb


def cases():
    out = []
    gm = cond_and_while_loop()
    out.append(('cond_and_while_loop', gm, gm, at_cond_and_loop(), False))
    m = MyModule()
    out.append(('subgraph_creation', m, torch.fx.symbolic_trace(m), counter(3), False))
    m = ModWithDeadCode()
    out.append(('dead_code', m, torch.fx.symbolic_trace(m), dead_code_callback(), False))
    m = ModelToTrace()
    out.append(('default_arg', m, torch.fx.symbolic_trace(m, concrete_args={'targets': None}), lambda n: 0, False))
    m = Diamond()
    out.append(('diamond', m, torch.fx.symbolic_trace(m), by_target({'relu': 0, 'sigmoid': 1, 'add': 2}), False))
    out.append(('diamond_keep_order', m, torch.fx.symbolic_trace(m),
                by_target({'relu': 0, 'sigmoid': 1, 'add': 2}), True))
    out.append(('keep_order_bad', m, torch.fx.symbolic_trace(m), by_target({'relu': 0, 'sigmoid': 1, 'add': 0}), True))
    out.append(('keep_order_fine', m, torch.fx.symbolic_trace(m), by_target({'relu': 0, 'sigmoid': 1, 'add': 0}), False))
    m = Nested()
    out.append(('nested', m, torch.fx.symbolic_trace(m), counter(2), False))
    out.append(('nested_one', m, torch.fx.symbolic_trace(m), lambda n: 7, False))
    gm = torch.fx.symbolic_trace(m)
    out.append(('nested_halves', m, gm, by_index(2, calls(gm)), False))
    m = Interleaved()
    out.append(('cycle', m, torch.fx.symbolic_trace(m), by_target({'relu': 0, 'sigmoid': 1, 'tanh': 0}), False))
    torch.manual_seed(0)
    m = tvm.resnet18().eval()
    gm = torch.fx.symbolic_trace(m)
    out.append(('resnet18_4', m, gm, by_index(4, calls(gm)), False))
    m = tvm.mobilenet_v2().eval()
    gm = torch.fx.symbolic_trace(m)
    out.append(('mobilenet_v2_3', m, gm, by_index(3, calls(gm)), False))
    return out


def main():
    pairs = normalizations.normalizations(normalizations.functional_targets())
    norm = lambda text: normalizations.apply(text, pairs)  # noqa: E731
    result = {}
    for name, m, gm, cb, keep in cases():
        qualname_map = {}
        try:
            split = split_module(gm, m, cb, qualname_map, keep_original_order=keep)
        except Exception as e:  # the C++ side must fail too
            result[name] = {'raises': type(e).__name__ + ': ' + str(e)}
            continue
        result[name] = {
            'graph': norm(str(split.graph)),
            'code': norm(split.code),
            'submodules': {n: norm(c.code) for n, c in split.named_children() if isinstance(c, torch.fx.GraphModule)},
            'qualname_map': qualname_map,
        }
    with open(sys.argv[1], 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
