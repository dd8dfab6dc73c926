#!/usr/bin/env python3
"""make_fx (torch 2.x) on the programs of programs.py; writes, into the JSON
file named on the command line, each program's graph text and code after the
normalizations docs/capture.md lists (apply_normalizations below; compare.py
applies the textual ones to both sides)."""
import json
import sys

try:
    import torch
    import torch.fx
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functionalize
    import torchvision  # noqa: F401
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import DYNAMIC, FUNCTIONALIZED, PROGRAMS  # noqa: E402


def node_name(graph, node):
    """The name make_fx gives a node made for `node`'s target."""
    if node.target is torch.ops.aten.sym_size.int:
        return None  # make_fx's own name for it, sym_size_int
    if node.op == 'call_function' and isinstance(node.target, torch._ops.OpOverload):
        return graph._target_to_str(node.target.overloadpacket.__name__)
    return None if node.op != 'placeholder' else node.name


def normalize(gm, root):
    """Parameters and buffers by path: make_fx names every tensor it reads
    that is not an input `_param_constant<i>` / `_tensor_constant<i>` (it
    traces a function, whose root has no parameters); fxcpp names the
    tensors of the captured module by their path (other tensors keep the
    make_fx style, numbered in order of first use). The graph is rebuilt
    with make_fx's naming, so names stay dense."""
    paths = {}
    if root is not None:
        for n, p in root.named_parameters():
            paths.setdefault(id(p), n)
        for n, b in root.named_buffers():
            paths.setdefault(id(b), n)
    constants, counts = {}, {'p': 0, 't': 0}
    old = gm.graph
    g = torch.fx.Graph()
    env = {}
    for n in old.nodes:
        if n.op == 'get_attr' and isinstance(getattr(gm, n.target), torch.nn.Module):
            env[n] = g.get_attr(n.target)  # a branch of cond / while_loop
            continue
        if n.op == 'get_attr':
            t = getattr(gm, n.target)
            path = paths.get(id(t))
            if path is None:
                if id(t) not in constants:
                    kind = 'p' if isinstance(t, torch.nn.Parameter) else 't'
                    prefix = '_param_constant' if kind == 'p' else '_tensor_constant'
                    constants[id(t)] = prefix + str(counts[kind])
                    counts[kind] += 1
                path = constants[id(t)]
            env[n] = g.get_attr(path)
            continue
        args = torch.fx.node.map_arg(n.args, lambda a: env[a])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: env[a])
        env[n] = g.create_node(n.op, n.target, args, kwargs, node_name(g, n))
    g._codegen = old._codegen
    return g


def main():
    out = {}
    for name, build in PROGRAMS.items():
        torch.manual_seed(0)
        root, fn, inputs = build()
        if build in FUNCTIONALIZED:
            fn = functionalize(fn)
        if build in DYNAMIC:
            # Every dimension symbolic; the programs read only the sizes
            # the C++ side marks dynamic. The weights stay real tensors.
            gm = make_fx(fn, tracing_mode='symbolic', _allow_non_fake_inputs=True)(*inputs)
        else:
            gm = make_fx(fn)(*inputs)
        g = normalize(gm, root)
        out[name] = {'graph': str(g), 'code': g.python_code('self').src,
                     'subgraphs': {k: m.code for k, m in gm.named_children() if isinstance(m, torch.fx.GraphModule)}}
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
