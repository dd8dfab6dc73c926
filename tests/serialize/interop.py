"""GraphModule files between torch.fx 2.14 and fxcpp, both ways.

    interop.py export DIR   torch.fx models -> DIR/py/<name>.fxg, with the graph
                            text and code torch.fx prints (<name>.json) and
                            inputs/outputs (<name>.io.pt) for fx_serialize_tests
    interop.py check DIR    the files fx_serialize_tests wrote (DIR/cpp) -> torch.fx:
                            same graph text and code as fxcpp printed, outputs
                            allclose to fxcpp's
    interop.py malformed DIR  fxcpp.format.load refuses broken files with
                            LoadError naming the position, and never imports
                            a module outside torch, torchvision, operator, math, builtins
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'python'))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    import torchvision
    from torch.fx.passes.shape_prop import ShapeProp
except ImportError as e:  # ctest: skipped, not failed
    print(f'interop.py: {e}; skipping')
    sys.exit(77)

import normalizations  # noqa: E402
from fxcpp import format as fxfile  # noqa: E402


class Functional(torch.nn.Module):
    """The Python twin of graph_module_file_test.cpp's Functional."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))
        self.register_buffer('scale', torch.rand(4) + 0.5)
        self.offset = torch.randn(4)

    def forward(self, x, alpha=0.5):
        h = torch.matmul(x, self.w) * self.scale + self.offset
        h = h + torch.full((4,), 2.0)
        s = torch.sum(h, dim=-1, dtype=torch.float64)
        t = h[..., 1::2]
        return torch.relu(t) * alpha, s, h.clamp(min=-1.0, max=1.0)


def models():
    torch.manual_seed(0)
    image = torch.randn(2, 3, 64, 64)
    yield 'functional', Functional(), [torch.randn(3, 4), 2.0]
    yield 'resnet18', torchvision.models.resnet18(), [image]
    yield 'mobilenet_v2', torchvision.models.mobilenet_v2(), [image]
    # An ATen-level graph: what make_fx captures (targets torch.ops.aten.*).
    from torch.fx.experimental.proxy_tensor import make_fx

    def linear_relu_sum(x, w):
        return torch.nn.functional.linear(x, w).relu().sum(dim=1)
    x, w = torch.randn(3, 4), torch.randn(5, 4)
    yield 'make_fx', make_fx(linear_relu_sum)(x, w), [x, w]

    # torch.cond and torch.while_loop: their branches are GraphModules below
    # the root (true_graph_0, while_loop_body_graph_0, ...).
    def control_flow(x):
        y = torch.cond(x.sum() > 0, lambda a: (a.sin() * 2,), lambda a: (a.cos() + 1,), (x,))[0]
        _, z = torch.while_loop(lambda i, c: i < 3, lambda i, c: (i + 1, c * 2), (torch.zeros((), dtype=torch.long), y))
        return z
    yield 'control_flow', make_fx(control_flow)(x), [x]


def flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [out]


def fxcpp_text(text, pairs):
    return normalizations.apply(text, pairs)


def export(root):
    os.makedirs(os.path.join(root, 'py'), exist_ok=True)
    pairs = normalizations.normalizations([])
    for name, model, inputs in models():
        model.eval()
        gm = model if isinstance(model, torch.fx.GraphModule) else torch.fx.symbolic_trace(model)
        ShapeProp(gm).propagate(*inputs)
        base = os.path.join(root, 'py', name)
        fxfile.save(gm, base + '.fxg')
        with torch.no_grad():
            outputs = flat(gm(*inputs))
        io = {f'in.{i}': x if isinstance(x, torch.Tensor) else torch.tensor(x) for i, x in enumerate(inputs)}
        io.update({f'out.{i}': y for i, y in enumerate(outputs)})
        torch.save(io, base + '.io.pt')
        with open(base + '.json', 'w') as f:
            texts = lambda m: {'graph': fxcpp_text(str(m.graph), pairs), 'code': fxcpp_text(m.code, pairs)}  # noqa: E731
            json.dump({**texts(gm), 'submodules': {path: texts(m) for path, m in graph_modules(gm)}}, f)
        # The file reads back in Python too.
        back = fxfile.load(base + '.fxg')
        assert str(back.graph) == str(gm.graph), name
        assert back.code == gm.code, name
        for (path, m), (_, b) in zip(graph_modules(gm), graph_modules(back), strict=True):
            assert str(b.graph) == str(m.graph) and b.code == m.code, f'{name}: {path}'


def graph_modules(gm):
    """The GraphModules below the root, by path."""
    return [(path, m) for path, m in gm.named_modules() if path and isinstance(m, torch.fx.GraphModule)]


def check(root):
    folder = os.path.join(root, 'cpp')
    names = sorted(f[:-4] for f in os.listdir(folder) if f.endswith('.fxg'))
    assert names, f'no files in {folder}'
    failures = []
    for name in names:
        base = os.path.join(folder, name)
        gm = fxfile.load(base + '.fxg')
        with open(base + '.json') as f:
            expected = json.load(f)
        targets = [n.target for n in gm.graph.nodes if n.op == 'call_function']
        pairs = normalizations.normalizations(
            [fxfile.target_name(t) for t in targets if fxfile.target_name(t).startswith('torch.nn.functional.')])
        # fxcpp prints the name it was given (torch.nn.functional.gelu), torch.fx the builtin's (torch._C._nn.gelu).
        texts = [('graph', str(gm.graph), expected['graph']), ('code', gm.code, expected['code'])]
        submodules = expected.get('submodules', {})
        if sorted(path for path, _ in graph_modules(gm)) != sorted(submodules):
            failures.append(f'{name}: GraphModules below the root {[p for p, _ in graph_modules(gm)]}, '
                            f'fxcpp had {sorted(submodules)}')
        for path, m in graph_modules(gm):
            if path in submodules:
                texts += [(f'{path} graph', str(m.graph), submodules[path]['graph']),
                          (f'{path} code', m.code, submodules[path]['code'])]
        for kind, text, want in texts:
            text = fxcpp_text(text, pairs)
            if text != want:
                failures.append(f'{name}: {kind} differs:\n--- torch.fx\n{text}\n--- fxcpp\n{want}')
        io = fxfile.load_tensors(base + '.io.pt')  # torch::pickle_save's file: tagged dicts
        inputs = [io[f'in.{i}'] for i in range(sum(k.startswith('in.') for k in io))]
        with torch.no_grad():
            outputs = flat(gm(*inputs))
        for i, y in enumerate(outputs):
            if not torch.allclose(y, io[f'out.{i}'], rtol=1e-4, atol=1e-5):
                failures.append(f'{name}: output {i} differs from fxcpp\'s')
        print(f'{name}: {"ok" if not failures else "FAILED"}')
    if failures:
        print('\n'.join(failures))
        sys.exit(1)


def rewritten(src, dst, edit):
    """A copy of the file src with its graph.json edited by edit(json object)."""
    top = json.loads(fxfile.read_record(src, 'graph.json'))
    edit(top)
    fxfile.write_archive(fxfile.load_tensors(src), dst, {'graph.json': json.dumps(top).encode()})
    return dst


def malformed(root):
    os.makedirs(os.path.join(root, 'malformed'), exist_ok=True)
    src = os.path.join(root, 'malformed', 'functional.fxg')
    fxfile.save(Functional(), src)

    def node(top, name):
        return next(n for n in top['graph']['nodes'] if n['name'] == name)

    def set_target(name, target):
        return lambda top: node(top, name).__setitem__('target', target)

    cases = [
        (set_target('relu', 'os.system'), "graph.nodes[12] ('relu'): the target 'os.system' is not in one of the modules"),
        (set_target('relu', 'torch.no_such_function'), "the target 'torch.no_such_function' does not exist"),
        (lambda top: node(top, 'matmul')['args'].__setitem__(0, {'node': 'relu'}),
         "graph.nodes[3] ('matmul').args[0]: refers to node 'relu', which is not defined before"),
        (lambda top: top.__setitem__('version', 99), 'version: this fxcpp reads versions 1 to 1'),
        (lambda top: top['tensors'][0].__setitem__('shape', [5]), "tensors[0] ('w'): declared torch.float32[5]"),
        (lambda top: top['tensors'].pop(0), "stored but not declared: ['w']"),
    ]
    failures = []
    for i, (edit, words) in enumerate(cases):
        path = rewritten(src, os.path.join(root, 'malformed', f'case{i}.fxg'), edit)
        try:
            fxfile.load(path)
            failures.append(f'case {i}: loaded')
        except fxfile.LoadError as e:
            if words not in str(e):
                failures.append(f'case {i}: {e}\n  expected: {words}')
    # A pickle that would run a command if torch.load's default unpickler read it.
    class Payload:
        def __reduce__(self):
            return (os.system, ('touch ' + os.path.join(root, 'malformed', 'pwned'),))

    evil = os.path.join(root, 'malformed', 'evil.fxg')
    fxfile.write_archive({'w': Payload()}, evil, {'graph.json': fxfile.read_record(src, 'graph.json')})
    try:
        fxfile.load(evil)
        failures.append('evil: loaded')
    except fxfile.LoadError as e:
        if 'refusing' not in str(e):
            failures.append(f'evil: {e}')
    if os.path.exists(os.path.join(root, 'malformed', 'pwned')):
        failures.append('evil: the pickle ran a command')
    with open(os.path.join(root, 'malformed', 'junk.fxg'), 'w') as f:
        f.write('junk')
    try:
        fxfile.load(os.path.join(root, 'malformed', 'junk.fxg'))
        failures.append('junk: loaded')
    except fxfile.LoadError as e:
        if 'not a GraphModule file' not in str(e):
            failures.append(f'junk: {e}')
    if failures:
        print('\n'.join(failures))
        sys.exit(1)
    print('malformed files: all refused')


if __name__ == '__main__':
    {'export': export, 'check': check, 'malformed': malformed}[sys.argv[1]](sys.argv[2])
