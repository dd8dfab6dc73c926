"""GraphModule files in Python: the format of docs/format.md, which fxcpp's
fx::save and fx::load read and write.

    fxcpp.format.save(gm, 'model.fxg')   # any nn.Module is traced first
    gm = fxcpp.format.load('model.fxg')  # a torch.fx.GraphModule

The file is a torch.save zip archive: torch.load(path) gives its tensors (a
dict from dotted path to tensor); its graph.json record holds the graph, the
module tree and the node meta.

Only public interfaces touch the archive: torch.save writes it (its
data.pkl, data/<key> records, byteorder and version records, whatever the
installed torch writes), Python's zipfile adds graph.json under the same
top folder, and torch.load(weights_only=True) reads the tensors back.
"""
import builtins
import importlib
import json
import math
import pickle
import warnings
import zipfile

import torch
import torch.fx
import torch.jit._pickle
from torch.fx.passes.shape_prop import TensorMetadata

from . import modules as module_specs

FORMAT = 'fxcpp.GraphModule'
VERSION = 1
CONTAINERS = ('torch.nn.Module', 'torch.nn.Sequential', 'torch.nn.ModuleList', 'torch.nn.ModuleDict')
# A GraphModule below the root (a branch of cond or while_loop, a submodule
# of split_module): listed with its graph, its tensors and children as a
# container's.
GRAPH_MODULE = 'torch.fx.GraphModule'
# The Python modules a call_function target may come from (torchvision for the
# functions it wraps for torch.fx, such as torchvision.ops.stochastic_depth).
# Loading a file imports nothing else.
TARGET_MODULES = ('torch', 'operator', 'math', 'builtins', '_operator', 'torchvision')


class LoadError(ValueError):
    """A file that is not a valid GraphModule file; the message names the
    file and the position in it."""


# ---- arguments ---------------------------------------------------------------

def arg_to_json(a, where):
    if a is None or isinstance(a, (bool, str)):
        return a
    if isinstance(a, int):
        if not -2**63 <= a < 2**63:
            raise ValueError(f'{where}: the integer {a} does not fit in 64 bits')
        return a
    if isinstance(a, float):
        if math.isfinite(a):
            return a
        return {'float': 'nan' if math.isnan(a) else 'inf' if a > 0 else '-inf'}
    if isinstance(a, torch.fx.Node):
        return {'node': a.name}
    if type(a) is tuple:
        return {'tuple': [arg_to_json(x, f'{where}[{i}]') for i, x in enumerate(a)]}
    if isinstance(a, list):  # torch.fx keeps lists as immutable_list
        return [arg_to_json(x, f'{where}[{i}]') for i, x in enumerate(a)]
    if isinstance(a, dict):
        for k in a:
            if not isinstance(k, str):
                raise ValueError(f'{where}: a dict argument with the key {k!r}; GraphModule files hold str keys only')
        return {'dict': {k: arg_to_json(v, f'{where}[{k!r}]') for k, v in a.items()}}
    if isinstance(a, slice):
        return {'slice': [arg_to_json(x, where) for x in (a.start, a.stop, a.step)]}
    if a is Ellipsis:
        return {'ellipsis': None}
    if isinstance(a, torch.dtype):
        return {'dtype': str(a)}
    if isinstance(a, torch.device):
        return {'device': str(a)}
    if isinstance(a, torch.layout):
        return {'layout': str(a)}
    if isinstance(a, torch.memory_format):
        return {'memory_format': str(a)}
    raise ValueError(f'{where}: the constant {a!r} ({type(a).__name__}) has no representation in a GraphModule '
                     'file (only None, numbers, strings, tuples, lists, dicts, nodes, slices, dtypes, devices, '
                     'layouts and memory formats do)')


_BY_NAME = {}
for _kind in (torch.dtype, torch.layout, torch.memory_format):
    for _v in vars(torch).values():
        if isinstance(_v, _kind):
            _BY_NAME.setdefault((_kind, str(_v)), _v)


def _named(kind, name, where):
    try:
        return _BY_NAME[(kind, name)]
    except (KeyError, TypeError):
        raise LoadError(f'{where}: unknown {kind.__name__} {name!r}') from None


def arg_from_json(j, where, nodes):
    if j is None or isinstance(j, (bool, int, float, str)):
        return j
    if isinstance(j, list):
        return [arg_from_json(x, f'{where}[{i}]', nodes) for i, x in enumerate(j)]
    if not isinstance(j, dict) or len(j) != 1:
        raise LoadError(f'{where}: an object argument has exactly one key (its kind: tuple, dict, node, ...)')
    (tag, v), = j.items()
    if tag == 'tuple':
        if not isinstance(v, list):
            raise LoadError(f'{where}: "tuple" holds an array')
        return tuple(arg_from_json(x, f'{where}[{i}]', nodes) for i, x in enumerate(v))
    if tag == 'node':
        if v not in nodes:
            raise LoadError(f'{where}: refers to node {v!r}, which is not defined before this node')
        return nodes[v]
    if tag == 'dict':
        if not isinstance(v, dict):
            raise LoadError(f'{where}: "dict" holds an object')
        return {k: arg_from_json(x, f'{where}[{k!r}]', nodes) for k, x in v.items()}
    if tag == 'slice':
        if not isinstance(v, list) or len(v) != 3:
            raise LoadError(f'{where}: a slice has 3 parts')
        return slice(*(arg_from_json(x, where, nodes) for x in v))
    if tag == 'ellipsis':
        return Ellipsis
    if tag == 'float':
        if v not in ('inf', '-inf', 'nan'):
            raise LoadError(f'{where}: "float" is one of "inf", "-inf", "nan"')
        return float(v)
    if tag == 'dtype':
        return _named(torch.dtype, v, where)
    if tag == 'layout':
        return _named(torch.layout, v, where)
    if tag == 'memory_format':
        return _named(torch.memory_format, v, where)
    if tag == 'device':
        try:
            return torch.device(v)
        except (RuntimeError, TypeError):
            raise LoadError(f'{where}: {v!r} is not a device') from None
    raise LoadError(f'{where}: unknown argument kind {tag!r}')


# ---- targets and types --------------------------------------------------------

def target_name(fn):
    """The qualified name fxcpp knows a call_function target by:
    `operator.add`, `torch.relu`, `builtins.getattr`, `torch.ops.aten.addmm.default`."""
    name = torch.fx.node._get_qualified_name(fn)
    if '.' not in name:  # a builtin: getattr, len
        return 'builtins.' + name
    if name.startswith('_operator.'):
        return 'operator.' + name[len('_operator.'):]
    return name


def resolve(name, where):
    """The object a qualified name names, found from one of TARGET_MODULES."""
    parts = name.split('.')
    if parts[0] not in TARGET_MODULES:
        raise LoadError(f'{where}: the target {name!r} is not in one of the modules {", ".join(TARGET_MODULES)}; '
                        'a function fxcpp wrapped in C++ has no Python counterpart')
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module('.'.join(parts[:i]))
            break
        except ImportError:
            continue
    else:
        obj, i = builtins, 1
    try:
        for p in parts[i:]:
            obj = getattr(obj, p)
    except AttributeError:
        raise LoadError(f'{where}: the target {name!r} does not exist in torch {torch.__version__}') from None
    return obj


def type_name(t):
    return None if t is None else torch.fx.node._type_repr(t)


def type_from_name(name, where):
    if name is None:
        return None
    try:
        return resolve(name if '.' in name else 'builtins.' + name, where)
    except LoadError:
        warnings.warn(f'{where}: the type annotation {name!r} is dropped (only plain class names are read back)')
        return None


# ---- meta ---------------------------------------------------------------------

def tensor_meta_to_json(m):
    if isinstance(m, TensorMetadata):
        j = {'shape': list(m.shape), 'dtype': str(m.dtype), 'requires_grad': m.requires_grad,
             'stride': list(m.stride),
             'memory_format': None if m.memory_format is None else str(m.memory_format),
             'is_quantized': m.is_quantized}
        if m.is_quantized:
            q = m.qparams
            scale, zero = q['scale'], q['zero_point']
            per_channel = isinstance(scale, torch.Tensor)
            j['qparams'] = {'qscheme': str(q['qscheme']),
                            'scale': scale.tolist() if per_channel else [scale],
                            'zero_point': zero.tolist() if per_channel else [zero],
                            'axis': q.get('axis')}
        return j
    if type(m) is tuple:
        return {'tuple': [tensor_meta_to_json(x) for x in m]}
    if type(m) is list:
        return [tensor_meta_to_json(x) for x in m]
    if isinstance(m, dict):
        return {'dict': {k: tensor_meta_to_json(v) for k, v in m.items()}}
    return {'other': repr(m)}


def tensor_meta_from_json(j, where):
    if isinstance(j, list):
        return [tensor_meta_from_json(x, where) for x in j]
    if not isinstance(j, dict):
        raise LoadError(f'{where}: expected tensor metadata')
    if 'shape' in j:
        try:
            qparams = {}
            if j['is_quantized']:
                q = j['qparams']
                qscheme = getattr(torch, q['qscheme'].replace('torch.', ''))
                if q['axis'] is None:
                    qparams = {'qscheme': qscheme, 'scale': q['scale'][0], 'zero_point': int(q['zero_point'][0])}
                else:
                    qparams = {'qscheme': qscheme, 'scale': torch.tensor(q['scale'], dtype=torch.double),
                               'zero_point': torch.tensor(q['zero_point']), 'axis': q['axis']}
            mf = j['memory_format']
            return TensorMetadata(torch.Size(j['shape']), _named(torch.dtype, j['dtype'], where),
                                  j['requires_grad'], tuple(j['stride']),
                                  None if mf is None else _named(torch.memory_format, mf, where),
                                  j['is_quantized'], qparams)
        except (KeyError, TypeError, AttributeError) as e:
            raise LoadError(f'{where}: malformed tensor metadata ({e!r})') from None
    if 'tuple' in j:
        return tuple(tensor_meta_from_json(x, where) for x in j['tuple'])
    if 'dict' in j:
        return {k: tensor_meta_from_json(v, where) for k, v in j['dict'].items()}
    if 'other' in j:
        return {'None': None, 'True': True, 'False': False}.get(j['other'], j['other'])
    raise LoadError(f'{where}: expected tensor metadata')


def meta_to_json(meta):
    out = {}
    for k, v in meta.items():
        if k == 'tensor_meta':
            out[k] = tensor_meta_to_json(v)
        elif isinstance(v, (str, bool)) or (isinstance(v, int) and -2**63 <= v < 2**63):
            out[k] = v
        elif isinstance(v, float) and math.isfinite(v):
            out[k] = v
    return out


# ---- save ---------------------------------------------------------------------

def to_json(gm):
    """The graph.json object of `gm` and its tensors (path -> tensor)."""
    modules, tensors, data = [], [], {}

    def tensor(path, kind, t):
        tensors.append({'path': path, 'kind': kind, 'dtype': str(t.dtype), 'shape': list(t.shape),
                        'requires_grad': t.requires_grad})
        data[path] = t.detach()

    def walk(m, prefix):
        for name, p in m._parameters.items():
            if p is not None:
                tensor(prefix + name, 'parameter', p)
        for name, b in m._buffers.items():
            if b is not None:
                tensor(prefix + name, 'buffer', b)
        for name, v in vars(m).items():
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                tensor(prefix + name, 'attribute', v)
        for name, c in m._modules.items():
            if c is None:
                continue
            path = prefix + name
            if isinstance(c, torch.fx.GraphModule):
                modules.append({'path': path, 'type': GRAPH_MODULE, 'kwargs': {}, 'training': c.training,
                                'class_name': type(c).__name__, 'graph': graph_to_json(c.graph)})
                walk(c, path + '.')
                continue
            try:
                # A container's own tensors are listed with the tensors, so it needs no constructor arguments.
                type_ = module_specs.type_name(c)
                type_, kwargs = (type_, {}) if type_ in CONTAINERS else module_specs.describe(c)
            except ValueError as e:
                raise ValueError(f'the submodule {path!r} has no file form: {e}') from None
            modules.append({'path': path, 'type': type_,
                            'kwargs': {k: arg_to_json(v, f'module {path!r} {k}') for k, v in kwargs.items()},
                            'training': c.training})
            if type_ in CONTAINERS:
                walk(c, path + '.')
            else:
                params = {n for n, _ in c.named_parameters()}
                for key, t in c.state_dict(keep_vars=True).items():
                    tensor(f'{path}.{key}', 'parameter' if key in params else 'buffer', t)

    walk(gm, '')
    top = {'format': FORMAT, 'version': VERSION, 'class_name': type(gm).__name__, 'training': gm.training,
           'modules': modules, 'tensors': tensors, 'graph': graph_to_json(gm.graph)}
    return top, data


def graph_to_json(graph):
    nodes = []
    for n in graph.nodes:
        where = f'node {n.name!r}'
        target = target_name(n.target) if n.op == 'call_function' else n.target
        nodes.append({'name': n.name, 'op': n.op, 'target': target,
                      'args': [arg_to_json(a, f'{where} args[{i}]') for i, a in enumerate(n.args)],
                      'kwargs': {k: arg_to_json(v, f'{where} kwargs[{k!r}]') for k, v in n.kwargs.items()},
                      'type': type_name(n.type), 'meta': meta_to_json(n.meta)})
    return {'nodes': nodes}


def _top_folder(archive, path):
    # PyTorchStreamReader finds every record under the folder of the archive's
    # first entry (torch.save names it after the file), and so does this.
    names = archive.namelist()
    if not names or '/' not in names[0]:
        raise LoadError(f'{path}: not a GraphModule file: not a torch.save archive (no top folder)')
    return names[0].split('/', 1)[0]


def write_archive(obj, path, records):
    """torch.save(obj, path), then each record (name -> bytes) added to the
    same archive, as torch.save's own records are, under its top folder.
    The records get a fixed date, so that the same module makes the same file."""
    path = str(path)
    torch.save(obj, path)
    with zipfile.ZipFile(path, 'a') as archive:
        folder = _top_folder(archive, path)
        for name, data in records.items():
            archive.writestr(zipfile.ZipInfo(f'{folder}/{name}', date_time=(1980, 1, 1, 0, 0, 0)), data)


def read_record(path, name):
    """The bytes of the record `name` of the torch.save archive at `path`, or
    None where it has none. Raises LoadError for a file that is no archive."""
    path = str(path)
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                return archive.read(f'{_top_folder(archive, path)}/{name}')
            except KeyError:
                return None
    except (zipfile.BadZipFile, OSError) as e:
        raise LoadError(f'{path}: not a GraphModule file: {e}') from None


def save(module, path):
    """Writes a GraphModule (or any nn.Module, traced with torch.fx.symbolic_trace) to `path`."""
    gm = module if isinstance(module, torch.fx.GraphModule) else torch.fx.symbolic_trace(module)
    top, data = to_json(gm)
    text = json.dumps(top, indent=1, allow_nan=False).encode()
    write_archive(data, path, {'graph.json': text})


# ---- load ---------------------------------------------------------------------

def load_tensors(path):
    """torch.load(path) of a file of tensors that fxcpp or torch.save wrote,
    with torch.load's weights_only unpickler: it calls nothing but what
    rebuilds tensors and plain containers, so a file can run no code.
    LibTorch's pickler (fx::save) tags typed containers with
    torch.jit._pickle.restore_type_tag, which returns its argument; it is
    the one function allowed on top of weights_only's own list."""
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return torch.load(str(path), map_location='cpu', weights_only=True)


def load(path):
    """The torch.fx.GraphModule a GraphModule file holds. Raises LoadError
    naming the file and the position for anything malformed."""
    path = str(path)
    text = read_record(path, 'graph.json')
    if text is None:
        raise LoadError(f'{path}: no graph.json record: a torch.save file, not a GraphModule file')
    try:
        top = json.loads(text)
    except ValueError as e:
        raise LoadError(f'{path}: graph.json is not JSON: {e}') from None
    try:
        stored = load_tensors(path)
    except pickle.UnpicklingError as e:
        # torch.load says why in a page of advice; _weights_only_reason picks the line.
        raise LoadError(f'{path}: refusing to load its tensors (data.pkl): they name something that is not a '
                        f'tensor: {_weights_only_reason(e)}') from None
    except (RuntimeError, ValueError, EOFError) as e:
        raise LoadError(f'{path}: not a GraphModule file: cannot read its tensors: {e}') from None
    if not isinstance(stored, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                               for k, v in stored.items()):
        raise LoadError(f'{path}: its tensors (data.pkl) are not a dict from str to tensor')
    try:
        return _from_json(top, stored)
    except LoadError as e:
        raise LoadError(f'{path}: {e}') from None
    except (KeyError, TypeError, AttributeError) as e:
        raise LoadError(f'{path}: malformed graph.json ({e!r})') from None


def _weights_only_reason(e):
    # torch.load's message opens with a paragraph on weights_only's default; the line
    # that names the refused global ("Trying to load unsupported GLOBAL posix.system ...",
    # "WeightsUnpickler error: Unsupported global: ...") is the one that says why.
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    reason = next((line for line in lines[1:] if 'global' in line.lower() or 'WeightsUnpickler' in line), None)
    return reason or (lines[-1] if lines else type(e).__name__)


def _from_json(top, stored):
    if top.get('format') != FORMAT:
        raise LoadError(f'format: expected {FORMAT!r}, got {top.get("format")!r}')
    if not isinstance(top.get('version'), int) or not 1 <= top['version'] <= VERSION:
        raise LoadError(f'version: this fxcpp reads versions 1 to {VERSION}, the file is {top.get("version")!r}')
    root = torch.nn.Module()
    mods = {'': (root, True)}
    flags = []
    graph_modules = []
    for i, mj in enumerate(top['modules']):
        path = mj['path']
        where = f'modules[{i}] ({path!r})'
        parent, _, name = path.rpartition('.')
        if not name or path in mods or parent not in mods or not mods[parent][1]:
            raise LoadError(f'{where}: not a new module under a container listed before it')
        kwargs = {k: arg_from_json(v, f'{where}.kwargs.{k}', {}) for k, v in mj['kwargs'].items()}
        if mj['type'] == GRAPH_MODULE:
            if kwargs:
                raise LoadError(f'{where}: {GRAPH_MODULE} takes no constructor arguments')
            if 'graph' not in mj:
                raise LoadError(f'{where}: missing "graph"')
            m = torch.nn.Module()  # made a GraphModule once its tensors and children are in place
            graph_modules.append((path, where, mj))
        elif mj['type'] == 'torch.nn.Module':
            m = torch.nn.Module()
        else:
            try:
                m = module_specs.construct(mj['type'], kwargs)
            except (ValueError, TypeError) as e:
                raise LoadError(f'{where}: {e}') from None
        mods[parent][0].add_module(name, m)
        mods[path] = (m, mj['type'] in CONTAINERS or mj['type'] == GRAPH_MODULE)
        flags.append((m, mj.get('training', True)))
    declared = set()
    with torch.no_grad():
        for i, tj in enumerate(top['tensors']):
            path = tj['path']
            where = f'tensors[{i}] ({path!r})'
            if path not in stored:
                raise LoadError(f'{where}: declared in graph.json but missing from the tensors (data.pkl)')
            t = stored[path]
            if str(t.dtype) != tj['dtype'] or list(t.shape) != tj['shape']:
                raise LoadError(f'{where}: declared {tj["dtype"]}{tj["shape"]}, stored {t.dtype}{list(t.shape)}')
            declared.add(path)
            owner, name = path, ''
            while True:
                owner, _, last = owner.rpartition('.')
                name = last if not name else f'{last}.{name}'
                if owner in mods:
                    break
            m, container = mods[owner]
            if not container:
                own = m.state_dict(keep_vars=True)
                if name not in own or own[name].shape != t.shape or own[name].dtype != t.dtype:
                    raise LoadError(f'{where}: the {type(m).__name__} at {owner!r} has no tensor {name!r} '
                                    f'of that shape and dtype')
                own[name].copy_(t)
            elif '.' in name:
                raise LoadError(f'{where}: no module is listed to hold it')
            elif tj['kind'] == 'parameter':
                m.register_parameter(name, torch.nn.Parameter(t, requires_grad=tj['requires_grad']))
            elif tj['kind'] == 'buffer':
                m.register_buffer(name, t)
            elif tj['kind'] == 'attribute':
                setattr(m, name, t)
            else:
                raise LoadError(f'{where}: unknown kind {tj["kind"]!r}')
    extra = set(stored) - declared
    if extra:
        raise LoadError(f'tensors: stored but not declared: {sorted(extra)}')
    for path, (m, container) in mods.items():
        if path and not container:
            for key in m.state_dict():
                if f'{path}.{key}' not in declared:
                    raise LoadError(f'tensors: the module {path!r} has the tensor {key!r}, which the file lacks')

    # GraphModules below the root, children before parents.
    for path, where, mj in reversed(graph_modules):
        container = mods[path][0]
        graph = _graph_from_json(mj['graph'], f'{where}.graph')
        try:
            gm = torch.fx.GraphModule(container, graph, mj['class_name'])
        except (RuntimeError, AttributeError) as e:
            raise LoadError(f'{where}: the graph does not make a GraphModule: {e}') from None
        parent, _, name = path.rpartition('.')
        mods[parent][0].add_module(name, gm)
        mods[path] = (gm, True)
        flags = [(gm if m is container else m, flag) for m, flag in flags]
    graph = _graph_from_json(top['graph'], 'graph')
    try:
        gm = torch.fx.GraphModule(root, graph, top['class_name'])
    except (RuntimeError, AttributeError) as e:
        raise LoadError(f'the graph does not make a GraphModule: {e}') from None
    gm.train(top['training'])
    for m, flag in flags:
        m.train(flag)
    return gm


def _graph_from_json(gj, prefix):
    graph = torch.fx.Graph()
    nodes = {}
    for i, nj in enumerate(gj['nodes']):
        name = nj['name']
        where = f'{prefix}.nodes[{i}] ({name!r})'
        if name in nodes:
            raise LoadError(f'{where}: a second node named {name!r}')
        op = nj['op']
        if op not in ('placeholder', 'get_attr', 'call_function', 'call_method', 'call_module', 'output'):
            raise LoadError(f'{where}: unknown op {op!r}')
        target = resolve(nj['target'], where) if op == 'call_function' else nj['target']
        args = tuple(arg_from_json(a, f'{where}.args[{k}]', nodes) for k, a in enumerate(nj['args']))
        kwargs = {k: arg_from_json(v, f'{where}.kwargs.{k}', nodes) for k, v in nj['kwargs'].items()}
        n = graph.create_node(op, target, args, kwargs, name, type_from_name(nj.get('type'), where))
        if n.name != name:
            raise LoadError(f'{where}: {name!r} is not usable as a node name')
        for k, v in nj.get('meta', {}).items():
            n.meta[k] = tensor_meta_from_json(v, f'{where}.meta.{k}') if k == 'tensor_meta' else v
        nodes[name] = n
    try:
        graph.lint()
    except RuntimeError as e:
        raise LoadError(f'{prefix}: {e}') from None
    return graph
