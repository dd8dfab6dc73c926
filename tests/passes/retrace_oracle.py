#!/usr/bin/env python3
"""torch.fx 2.14's Proxy/retracing transforms (GraphAppendingTracer, as in FX's
documentation) on the models of retrace_test.cpp: writes the transformed
graph, code and str(GraphModule), or the exception raised, to the JSON file
named on the command line."""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx as fx
    import torch.nn.functional as F
    from torch.fx.proxy import GraphAppendingTracer
    import torchvision.models as tvm
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402


class ReluGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = F.relu(self.linear(x))
        return F.gelu(y) + torch.relu(x)


def relu_decomposition(x):
    return (x > 0) * x


def gelu_decomposition(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def with_constant(x):
    return x + torch.ones(4)


def decompose(model, rules):
    """FX's documented decompose(): a new graph, node_copy or the rule traced on Proxies."""
    graph = fx.Tracer().trace(model)
    new_graph = fx.Graph()
    env = {}
    tracer = GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == 'call_function' and node.target in rules:
            proxy_args = [fx.Proxy(env[x.name], tracer) if isinstance(x, fx.Node) else x for x in node.args]
            env[node.name] = rules[node.target](*proxy_args).node
        else:
            env[node.name] = new_graph.node_copy(node, lambda x: env[x.name])
    return fx.GraphModule(model, new_graph)


def decompose_in_place(gm, rules):
    """The same rules applied inside the graph, before each node they replace."""
    for node in list(gm.graph.nodes):
        if node.op == 'call_function' and node.target in rules:
            with gm.graph.inserting_before(node):
                tracer = GraphAppendingTracer(gm.graph)
                out = rules[node.target](*[fx.Proxy(a, tracer) if isinstance(a, fx.Node) else a for a in node.args])
            node.replace_all_uses_with(out.node)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def decompose_relu_modules(gm):
    """Every nn.ReLU module call -> (x > 0) * x, in place (resnet18)."""
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op == 'call_module' and isinstance(modules[node.target], torch.nn.ReLU):
            with gm.graph.inserting_before(node):
                out = relu_decomposition(fx.Proxy(node.args[0], GraphAppendingTracer(gm.graph)))
            node.replace_all_uses_with(out.node)
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def main():
    pairs = normalizations.normalizations(normalizations.functional_targets())
    norm = lambda text: normalizations.apply(text, pairs)  # noqa: E731
    rules = {F.relu: relu_decomposition, F.gelu: gelu_decomposition, torch.relu: relu_decomposition}
    out = {}

    def record(name, make):
        try:
            gm = make()
        except Exception as e:
            out[name] = {'raises': type(e).__name__ + ': ' + str(e)}
            return
        out[name] = {'graph': norm(str(gm.graph)), 'code': norm(gm.code), 'str': norm(str(gm))}

    record('decompose', lambda: decompose(ReluGelu(), rules))
    record('in_place', lambda: decompose_in_place(fx.symbolic_trace(ReluGelu()), rules))
    record('constant', lambda: decompose(ReluGelu(), {F.relu: with_constant}))
    record('resnet18', lambda: decompose_relu_modules(fx.symbolic_trace(tvm.resnet18())))
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
