"""The modules whose constructor arguments are checked on both sides, and the
JSON form of those arguments for nn_test.cpp (python/fxcpp/modules.py does the
describing)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'python'))
sys.path.insert(0, HERE)

from cases import CASES, SPEC_CASES  # noqa: E402
from fxcpp.modules import CONTAINERS, TYPES, construct, describe  # noqa: E402
from models import AllModules  # noqa: E402


def roots():
    """name -> [(path, module)]: every case module, and the children of AllModules
    (a model's own class, which fxcpp does not describe)."""
    out = {name: [('', ctor())] for name, (ctor, _, _) in CASES.items()}
    out.update({name: [('', ctor())] for name, ctor in SPEC_CASES.items()})
    out['all_modules'] = list(AllModules().named_children())
    return out


def walk(module, path):
    """(path, type, kwargs) of `module` and, through containers, of its children."""
    type_name, kwargs = describe(module)
    yield path, type_name, kwargs
    if type_name in CONTAINERS:
        for name, child in module.named_children():
            yield from walk(child, f'{path}.{name}' if path else name)


def rebuild(module):
    """`module` constructed anew from its description, containers with their children."""
    type_name, kwargs = describe(module)
    made = construct(type_name, kwargs)
    if type_name in CONTAINERS:
        for name, child in module.named_children():
            made.add_module(name, rebuild(child))
    return made


def encode(value):
    """JSON that keeps Python's kinds: a tuple is {"tuple": [...]}; json writes a
    float with a fraction or exponent (1.0, 1e-05) at full precision, which
    nlohmann reads back as a float, and an int without."""
    if isinstance(value, tuple):
        return {'tuple': [encode(v) for v in value]}
    assert value is None or isinstance(value, (bool, int, float, str)), repr(value)
    return value


def expected_specs():
    """name -> [[path, type, [[argument, value], ...]], ...], arguments in __init__'s order."""
    return {name: [[path, type_name, [[k, encode(v)] for k, v in kwargs.items()]]
                   for root_path, m in modules for path, type_name, kwargs in walk(m, root_path)]
            for name, modules in roots().items()}
