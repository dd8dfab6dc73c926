"""torch.export programs for fx::load_exported's tests.

    pt2_programs.py DIR   writes, for each program NAME:
      DIR/NAME.pt2        torch.export.save of the program
      DIR/NAME.json       what torch 2.14 prints for the loaded program
                          (torch.export.load(path)): the graph text, the code,
                          the graph signature, the range constraints; and the
                          non-tensor leaves of the output
      DIR/NAME.io.pt      inputs (in.<i>), outputs' tensor leaves (out.<i>),
                          and state after one run of ep.module() (after.<key>:
                          buffers; after_in.<i>: the inputs)
    and DIR/malformed/*.pt2, broken copies of one program, with
    DIR/malformed/expected.json: file name -> the words the error must hold.

    pt2_programs.py --check DIR   reads the programs fx::save_exported wrote
      (DIR/NAME.pt2) with torch.export.load: the graph prints as fxcpp
      printed it (NAME.graph.txt) and ep.module() on NAME.in.pt gives the
      outputs fxcpp computed (NAME.out.pt).
"""
import io
import json
import os
import struct
import sys
import zipfile

try:
    import torch
    import torch.utils._pytree as pytree
    from torch.export import Dim
except ImportError as e:  # ctest: skipped, not failed
    print(f'pt2_programs.py: {e}; skipping')
    sys.exit(77)

torch.manual_seed(0)


class LinearBuffer(torch.nn.Module):
    """The training IR (torch.export's default): the buffer's add_ stays in the graph."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer('count', torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        return torch.relu(self.lin(x)) + self.count


class Mutations(torch.nn.Module):
    """After run_decompositions: functional, with buffer and input mutations as outputs."""

    def __init__(self):
        super().__init__()
        self.register_buffer('running', torch.zeros(3))
        self.register_buffer('scratch', torch.ones(3), persistent=False)
        self.c = torch.ones(3) * 2

    def forward(self, x, y):
        self.running.mul_(0.9).add_(x.mean(0))
        y.add_(1)
        return torch.nn.functional.layer_norm(x, (3,)) + self.c + self.scratch, y * 2


class Dynamic(torch.nn.Module):
    """A dynamic batch: sym_size, SymInt arithmetic, a multi-output op, an int output."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x).view(x.shape[0] * 3)
        v, i = y.max(dim=0)
        return v, i, x.shape[0] * 2


class Structured(torch.nn.Module):
    """A list input, a keyword input and a dict output."""

    def forward(self, xs, *, scale):
        s = xs[0] * scale + xs[1]
        return {'logits': s, 'probs': torch.softmax(s, dim=-1)}


class Masked(torch.nn.Module):
    """-inf and nan constants (Python's json writes -Infinity and NaN) and attention."""

    def forward(self, q, k, v):
        mask = torch.ones(q.shape[-2], k.shape[-2]).tril().bool()
        scores = (q @ k.transpose(-1, -2)).masked_fill(~mask, float('-inf'))
        out = torch.softmax(scores, dim=-1) @ v
        return out, torch.nan_to_num(out, nan=float('nan'), posinf=float('inf'))


class Cond(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos() + 1, (x,))


class WhileLoop(torch.nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop
        return while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * 2), (torch.tensor(0), x))


class DocExample(torch.nn.Module):
    """docs/pt2.md's example."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer('calls', torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return torch.nn.functional.gelu(self.lin(x)) * 2


PROGRAMS = {
    'linear_buffer': lambda: (LinearBuffer(), (torch.randn(2, 4),), {}, None, False),
    'mutations': lambda: (Mutations(), (torch.randn(2, 3), torch.randn(3)), {}, None, True),
    'dynamic': lambda: (Dynamic(), (torch.randn(5, 4),), {}, {'x': {0: Dim('batch', min=2, max=64)}}, False),
    'structured': lambda: (Structured(), ([torch.randn(2, 5), torch.randn(2, 5)],), {'scale': torch.tensor(3.0)},
                           None, False),
    'masked': lambda: (Masked(), (torch.randn(2, 4, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8)), {}, None, False),
    'cond': lambda: (Cond(), (torch.randn(3),), {}, None, False),
    'while_loop': lambda: (WhileLoop(), (torch.randn(3),), {}, None, False),
    # forward(self, input): torch.export names the placeholder `input`, a
    # builtin, which the code renames (`input_1 = input`).
    'sequential': lambda: (torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),), {},
                           None, False),
    'doc_example': lambda: (DocExample(), (torch.randn(8, 4),), {}, {'x': {0: Dim('batch', min=2, max=64)}},
                            False),
}

# Inputs to run on, where they differ from the ones exported with.
RUN_INPUTS = {
    'dynamic': lambda: ((torch.randn(7, 4),), {}),
    'cond': lambda: ((-torch.rand(3) - 1,), {}),
    'doc_example': lambda: ((torch.randn(16, 4),), {}),
}


def clone(tree):
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, tree)


def write_program(out_dir, name):
    module, args, kwargs, dynamic_shapes, decompose = PROGRAMS[name]()
    ep = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes)
    if decompose:
        ep = ep.run_decompositions()
    path = os.path.join(out_dir, name + '.pt2')
    torch.export.save(ep, path)
    loaded = torch.export.load(path)
    gm = loaded.graph_module
    subgraphs = {n: m.code for n, m in gm.named_children()}
    run_args, run_kwargs = RUN_INPUTS[name]() if name in RUN_INPUTS else (clone(args), clone(kwargs))
    flat_in = pytree.tree_leaves((run_args, run_kwargs))
    io_dict = {f'in.{i}': t.clone() for i, t in enumerate(flat_in)}
    unlifted = loaded.module()
    outputs = unlifted(*run_args, **run_kwargs)
    leaves = pytree.tree_leaves(outputs)
    values = {}
    for i, v in enumerate(leaves):
        if isinstance(v, torch.Tensor):
            io_dict[f'out.{i}'] = v.detach().clone()
        else:
            values[str(i)] = v
    for i, t in enumerate(flat_in):
        io_dict[f'after_in.{i}'] = t.clone()
    for key, t in unlifted.state_dict().items():
        io_dict[f'after.{key}'] = t.detach().clone()
    torch.save(io_dict, os.path.join(out_dir, name + '.io.pt'))
    expected = {
        'graph': str(gm.graph),
        'code': gm.code,
        'signature': str(loaded.graph_signature),
        'range_constraints': {str(k): [int(v.lower), None if v.upper.is_infinite else int(v.upper)]
                              for k, v in loaded.range_constraints.items()},
        'subgraphs': subgraphs,
        'num_leaves': len(leaves),
        'values': values,
        'output_kind': type(outputs).__name__,
    }
    with open(os.path.join(out_dir, name + '.json'), 'w') as f:
        json.dump(expected, f, indent=1)


def rewrite(src, dst, edit):
    """A copy of the archive src with edit(record name, bytes) -> bytes applied."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w', zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = edit(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info, data)


def edit_model(fn):
    def edit(name, data):
        if name.endswith('models/model.json'):
            m = json.loads(data)
            fn(m)
            return json.dumps(m).encode()
        return data
    return edit


def zip_of(records):
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as z:
        for name, data in records.items():
            z.writestr(name, data)
    return out.getvalue()


def corrupt_record(raw, name):
    """raw with the first byte of the stored record `name` changed, so that its checksum fails."""
    header = raw.index(name) - 30  # the local header, where the name first occurs
    name_len, extra_len = struct.unpack('<HH', raw[header + 26:header + 30])
    data = header + 30 + name_len + extra_len
    return raw[:data] + bytes([raw[data] ^ 0x01]) + raw[data + 1:]


def with_zip64_offsets(raw):
    """raw with every central directory record giving its local header offset as 0xFFFFFFFF and the
    offset in a ZIP64 extra field, as Python's zipfile writes records that start past 2 GiB (a
    GraphModule file with over 2 GiB of tensors). The records themselves do not move."""
    eocd = raw.rindex(b'PK\x05\x06')
    count, cd_size, cd_offset = struct.unpack('<HII', raw[eocd + 10:eocd + 20])
    cd, p = b'', cd_offset
    for _ in range(count):
        name_len, extra_len, comment_len = struct.unpack('<HHH', raw[p + 28:p + 34])
        offset, = struct.unpack('<I', raw[p + 42:p + 46])
        end = p + 46 + name_len + extra_len + comment_len
        extra = raw[p + 46 + name_len:p + 46 + name_len + extra_len] + struct.pack('<HHQ', 1, 8, offset)
        cd += (raw[p:p + 30] + struct.pack('<H', len(extra)) + raw[p + 32:p + 42] + struct.pack('<I', 0xFFFFFFFF)
               + raw[p + 46:p + 46 + name_len] + extra + raw[p + 46 + name_len + extra_len:end])
        p = end
    return raw[:cd_offset] + cd + raw[eocd:eocd + 12] + struct.pack('<I', len(cd)) + raw[eocd + 16:]


def write_zip64(out_dir):
    src = os.path.join(out_dir, 'sequential.pt2')
    dst = os.path.join(out_dir, 'sequential_zip64.pt2')
    open(dst, 'wb').write(with_zip64_offsets(open(src, 'rb').read()))
    x = torch.randn(2, 4)
    assert torch.equal(torch.export.load(dst).module()(x), torch.export.load(src).module()(x))


def write_malformed(out_dir):
    bad = os.path.join(out_dir, 'malformed')
    os.makedirs(bad, exist_ok=True)
    src = os.path.join(out_dir, 'linear_buffer.pt2')
    raw = open(src, 'rb').read()
    expected = {}

    def case(name, words, edit=None, data=None):
        path = os.path.join(bad, name + '.pt2')
        if data is not None:
            open(path, 'wb').write(data)
        else:
            rewrite(src, path, edit)
        expected[name + '.pt2'] = words

    def nodes(m):
        return m['graph_module']['graph']['nodes']

    case('truncated', ['truncated.pt2'], data=raw[:len(raw) // 2])
    case('not_zip', ['not a torch.export archive'], data=b'hello' * 10)
    case('newer_schema', ['schema_version', '9.0', '8.20'],
         edit_model(lambda m: m.__setitem__('schema_version', {'major': 9, 'minor': 0})))
    case('unknown_operator', ['nodes[1]', 'linear', 'unknown operator', 'torch.ops.aten.no_such_op.default'],
         edit_model(lambda m: nodes(m)[1].__setitem__('target', 'torch.ops.aten.no_such_op.default')))
    case('dangling_name', ['nodes[2]', 'relu', 'no_such_value'],
         edit_model(lambda m: nodes(m)[2]['inputs'][0]['arg']['as_tensor'].__setitem__('name', 'no_such_value')))
    case('not_json', ['models/model.json', 'not JSON'],
         lambda name, data: b'{"graph_module": ' if name.endswith('models/model.json') else data)
    case('no_archive_format', ['archive_format'],
         lambda name, data: None if name.endswith('archive_format') else data)
    case('short_weight', ['weight_0', 'holds'],
         lambda name, data: data[:8] if name.endswith('weights/weight_0') else data)
    case('missing_weight', ['lin.weight'],
         lambda name, data: (data.replace(b'"lin.weight"', b'"lin.other"')
                             if name.endswith('model_weights_config.json') else data))
    case('bad_argument_kind', ['nodes[2]', 'as_banana'],
         edit_model(lambda m: nodes(m)[2]['inputs'][0].__setitem__('arg', {'as_banana': 1})))
    case('bad_dtype', ['dtype', '99'],
         edit_model(lambda m: m['graph_module']['graph']['tensor_values']['x'].__setitem__('dtype', 99)))
    case('unknown_higher_order', ['nodes[1]', 'unknown higher-order operator', 'no_such_hop'],
         edit_model(lambda m: nodes(m)[1].__setitem__('target', 'torch.ops.higher_order.no_such_hop')))
    # The archive's own layout, which LibTorch's reader checks after miniz
    # has read the zip (fxcpp checks it first: a throw there lost miniz's state).
    case('no_version', ['no version record'],
         lambda name, data: None if name.endswith('.data/version') else data)
    case('unsupported_version', ['version 99'],
         lambda name, data: b'99\n' if name.endswith('.data/version') else data)
    case('bad_version_checksum', ['version record'], data=corrupt_record(raw, b'linear_buffer/.data/version'))
    case('not_in_a_folder', ['not in a subdirectory'], data=zip_of({'archive_format': b'pt2'}))
    case('no_files', ['does not contain any files'], data=zip_of({}))
    with open(os.path.join(bad, 'expected.json'), 'w') as f:
        json.dump(expected, f, indent=1)


def check_saved(saved_dir):
    names = sorted(f[:-4] for f in os.listdir(saved_dir) if f.endswith('.pt2'))
    if not names:
        print(f'no .pt2 files in {saved_dir}')
        return 1
    failed = 0
    for name in names:
        base = os.path.join(saved_dir, name)
        ep = torch.export.load(base + '.pt2')
        graph = open(base + '.graph.txt').read()
        if str(ep.graph_module.graph) != graph:
            print(f'{name}: torch prints the graph differently:\n{ep.graph_module.graph}\nfxcpp:\n{graph}')
            failed += 1
            continue
        inputs = torch.load(base + '.in.pt')
        expected = torch.load(base + '.out.pt')
        got = [x for x in pytree.tree_leaves(ep.module()(*inputs)) if isinstance(x, torch.Tensor)]
        if len(got) != len(expected) or not all(torch.allclose(g, e, rtol=1e-5, atol=1e-6)
                                                for g, e in zip(got, expected)):
            print(f'{name}: torch.export.load(...).module() gives other outputs than fxcpp')
            failed += 1
            continue
        if os.path.exists(base + '.in2.pt'):  # a dynamic program, at another size
            got = [x for x in pytree.tree_leaves(ep.module()(*torch.load(base + '.in2.pt')))
                   if isinstance(x, torch.Tensor)]
            expected = torch.load(base + '.out2.pt')
            if len(got) != len(expected) or not all(torch.allclose(g, e, rtol=1e-5, atol=1e-6)
                                                    for g, e in zip(got, expected)):
                print(f'{name}: at another size, torch.export.load(...).module() gives other outputs than fxcpp')
                failed += 1
                continue
        print(f'{name}: torch.export.load reads it; same graph text, same outputs')
    return 1 if failed else 0


def main():
    if sys.argv[1] == '--check':
        sys.exit(check_saved(sys.argv[2]))
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in PROGRAMS:
        write_program(out_dir, name)
    write_zip64(out_dir)
    write_malformed(out_dir)


if __name__ == '__main__':
    main()
