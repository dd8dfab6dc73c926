#!/usr/bin/env python3
"""torch.fx oracle for fxcpp's conformance test.

    python oracle.py cases.json expected.json   # the venv python of scripts/env.sh

Builds every case of cases.json with torch.fx (torch 2.14) and writes what torch.fx
prints for it, after the normalizations of normalizations.py:

    {"torch_version": ..., "normalizations": [[from, to, why], ...],
     "cases": {name: {"graph": str(graph), "code": graph.python_code('self').src,
                      "tabular": the print_tabular text (cases with "tabular": true)}}}

conformance_test.cpp builds the same cases with fxcpp and compares byte for byte.
The case DSL is described in docs/conformance.md. Exits with 77 (ctest: skipped)
when torch or tabulate cannot be imported, after removing a stale expected.json.
"""

import builtins
import json
import math
import operator
import os
import sys
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import normalizations  # noqa: E402

SKIP = 77
NODE_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


class CaseError(Exception):
    pass


def load_torch():
    global torch, fx, F, tabulate
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import torch.fx as fx
    import torch.nn.functional as F
    from tabulate import tabulate


# ---- targets -------------------------------------------------------------

_user_functions = {}


def user_function(qualified):
    """A stand-in for a function that is not torch's: same __module__ and __name__,
    one object per name (fxcpp interns targets by name)."""
    fn = _user_functions.get(qualified)
    if fn is None:
        module, _, name = qualified.rpartition(".")
        if not module:
            raise CaseError(f"user function target {qualified!r} needs a module: write it as module.name")

        def fn(*args, **kwargs):
            raise NotImplementedError(qualified)
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = module
        _user_functions[qualified] = fn
    return fn


def walk(obj, path, qualified):
    for atom in path:
        try:
            obj = getattr(obj, atom)
        except AttributeError:
            raise CaseError(f"cannot resolve target {qualified!r}: no attribute {atom!r}")
    return obj


def resolve_function(t):
    head, _, rest = t.partition(".")
    if head == "operator":
        return walk(operator, rest.split("."), t)
    if head == "builtins":
        return walk(builtins, rest.split("."), t)
    if head == "math":
        return walk(math, rest.split("."), t)
    if t.startswith("torch.nn.functional."):
        return walk(F, t[len("torch.nn.functional."):].split("."), t)
    if t.startswith("torch.ops."):
        return walk(torch.ops, t[len("torch.ops."):].split("."), t)
    if head == "torch":
        return walk(torch, rest.split("."), t)
    return user_function(t)


# ---- values --------------------------------------------------------------

TYPE_NAMESPACE = None


def type_expr(s):
    """A type annotation: the string as torch.fx prints it, evaluated to the object."""
    global TYPE_NAMESPACE
    if TYPE_NAMESPACE is None:
        TYPE_NAMESPACE = {"torch": torch, "typing": typing, "NoneType": type(None)}
    t = eval(s, TYPE_NAMESPACE)
    from torch.fx.node import _type_repr
    if _type_repr(t) != s:
        raise CaseError(f"type {s!r} prints as {_type_repr(t)!r} in torch.fx: write it that way")
    return t


FLOAT_WORDS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def value(v, nodes):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        raise CaseError(f"bare JSON list {v!r}: write {{\"tuple\": [...]}} or {{\"list\": [...]}}")
    if not isinstance(v, dict) or len(v) != 1:
        raise CaseError(f"an argument object has exactly one key, got {v!r}")
    (kind, x), = v.items()
    if kind == "node":
        n = nodes[x] if isinstance(x, int) and 0 <= x < len(nodes) else None
        if not isinstance(n, fx.Node):
            raise CaseError(f"{{\"node\": {x!r}}} is not a node entry")
        return n
    if kind == "tuple":
        return tuple(value(a, nodes) for a in x)
    if kind == "list":
        return [value(a, nodes) for a in x]
    if kind == "dict":
        out = {}
        for key, a in x:
            if not isinstance(key, str):
                raise CaseError(f"dict keys are strings, got {key!r}")
            out[key] = value(a, nodes)
        return out
    if kind == "slice":
        if len(x) != 3:
            raise CaseError("a slice is [start, stop, step]")
        return slice(*(value(a, nodes) for a in x))
    if kind == "ellipsis":
        return ...
    if kind == "dtype":
        d = getattr(torch, x)
        if not isinstance(d, torch.dtype):
            raise CaseError(f"{x!r} is not a dtype")
        return d
    if kind == "device":
        return torch.device(x)
    if kind == "layout":
        d = getattr(torch, x)
        if not isinstance(d, torch.layout):
            raise CaseError(f"{x!r} is not a layout")
        return d
    if kind == "memory_format":
        d = getattr(torch, x)
        if not isinstance(d, torch.memory_format):
            raise CaseError(f"{x!r} is not a memory format")
        return d
    if kind == "float":
        return FLOAT_WORDS[x]
    raise CaseError(f"unknown argument kind {kind!r}")


# ---- building ------------------------------------------------------------

def build(case):
    g = fx.Graph()
    entries = case["nodes"]
    nodes = [None] * len(entries)
    insert_point = None

    def node_at(i):
        if not isinstance(nodes[i], fx.Node):
            raise CaseError(f"entry {i} is not a node")
        return nodes[i]

    for i, e in enumerate(entries):
        kind = e[0]
        if kind in NODE_OPS:
            op, target, args, kwargs, opts = e
            unknown = set(opts) - {"name", "type", "default", "is_wrapped"}
            if unknown:
                raise CaseError(f"entry {i}: unknown options {sorted(unknown)}")
            args = tuple(value(a, nodes) for a in args)
            kwargs = {k: value(a, nodes) for k, a in kwargs.items()}
            if "default" in opts:
                if op != "placeholder" or args:
                    raise CaseError(f"entry {i}: 'default' is for placeholders without args")
                args = (value(opts["default"], nodes),)
            t = type_expr(opts["type"]) if "type" in opts else None
            fn_target = resolve_function(target) if op == "call_function" else target
            if "name" in opts:
                n = g.create_node(op, fn_target, args, kwargs, name=opts["name"], type_expr=t)
            elif op == "placeholder":
                default = args[0] if args else __import__("inspect").Signature.empty
                n = g.placeholder(target, type_expr=t, default_value=default)
            elif op == "get_attr":
                n = g.get_attr(target, type_expr=t)
            elif op == "call_function":
                n = g.call_function(fn_target, args, kwargs, type_expr=t)
            elif op == "call_method":
                n = g.call_method(target, args, kwargs, type_expr=t)
            elif op == "call_module":
                n = g.call_module(target, args, kwargs, type_expr=t)
            else:
                if target != "output" or len(args) != 1 or kwargs:
                    raise CaseError(f"entry {i}: an output is [\"output\", \"output\", [value], {{}}, opts]")
                n = g.output(args[0], type_expr=t)
            if opts.get("is_wrapped"):
                n.meta["is_wrapped"] = True
            nodes[i] = n
        elif kind in ("inserting_before", "inserting_after", "insert_at_end"):
            if insert_point is not None:
                insert_point.__exit__(None, None, None)
                insert_point = None
            if kind != "insert_at_end":
                where = None if e[1] is None else node_at(e[1])  # None: the beginning / the end
                insert_point = g.inserting_before(where) if kind == "inserting_before" else g.inserting_after(where)
                insert_point.__enter__()
        elif kind == "erase":
            g.erase_node(node_at(e[1]))
        elif kind == "replace_all_uses_with":
            # ["replace_all_uses_with", old, new] or [..., old, new, "except", [user, ...]]
            old, new = node_at(e[1]), node_at(e[2])
            if len(e) > 3:
                if e[3] != "except":
                    raise CaseError(f"entry {i}: expected 'except'")
                skip = {node_at(j) for j in e[4]}
                old.replace_all_uses_with(new, lambda user: user not in skip)
            else:
                old.replace_all_uses_with(new)
        elif kind == "set_args":
            node_at(e[1]).args = tuple(value(a, nodes) for a in e[2])
        elif kind == "set_kwargs":
            node_at(e[1]).kwargs = {k: value(a, nodes) for k, a in e[2].items()}
        elif kind == "update_arg":
            node_at(e[1]).update_arg(e[2], value(e[3], nodes))
        elif kind == "update_kwarg":
            node_at(e[1]).update_kwarg(e[2], value(e[3], nodes))
        elif kind == "prepend":
            node_at(e[1]).prepend(node_at(e[2]))
        elif kind == "append":
            node_at(e[1]).append(node_at(e[2]))
        elif kind == "eliminate_dead_code":
            g.eliminate_dead_code()
        else:
            raise CaseError(f"entry {i}: unknown entry kind {kind!r}")
    if insert_point is not None:
        insert_point.__exit__(None, None, None)
    g.lint()
    return g


def tabular(g, pairs):
    """graph.print_tabular()'s table, with each target as its qualified name: torch.fx
    prints the function object (<built-in function add>), fxcpp its qualified name."""
    rows = []
    for n in g.nodes:
        target = n._pretty_print_target(n.target) if n.op == "call_function" else n.target
        rows.append([n.op, n.name, normalizations.apply(target, pairs), n.args, n.kwargs])
    return tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"])


def check_json_numbers(cases_text):
    """1.0 must stay a float and 1 an int once parsed (the C++ side checks nlohmann too)."""
    probe = json.loads('[1.0, 1e-05, 1, -0.0, 2.5e+20]')
    kinds = [type(x) for x in probe]
    if kinds != [float, float, int, float, float]:
        raise CaseError(f"json number kinds changed: {kinds}")


def call_function_targets(cases):
    for case in cases:
        for e in case["nodes"]:
            if e[0] == "call_function":
                yield e[1]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cases_path, out_path = argv[1], argv[2]
    try:
        load_torch()
    except ImportError as err:
        if os.path.exists(out_path):
            os.remove(out_path)
        print(f"oracle: skipped, cannot import torch.fx and tabulate with {sys.executable}: {err}")
        return SKIP

    with open(cases_path, encoding="utf-8") as f:
        text = f.read()
    check_json_numbers(text)
    cases = json.loads(text)["cases"]
    pairs = normalizations.normalizations(call_function_targets(cases))

    results = {}
    failures = 0
    for case in cases:
        name = case["name"]
        if name in results:
            print(f"oracle: duplicate case name {name}", file=sys.stderr)
            failures += 1
            continue
        try:
            g = build(case)
            r = {"graph": normalizations.apply(str(g), pairs),
                 "code": normalizations.apply(g.python_code("self").src, pairs)}
            if case.get("tabular"):
                r["tabular"] = tabular(g, pairs)
            results[name] = r
        except Exception as err:  # a broken case is the harness's bug: say which
            print(f"oracle: case {name}: {type(err).__name__}: {err}", file=sys.stderr)
            failures += 1
    if failures:
        return 1

    expected = {
        "torch_version": torch.__version__,
        "normalizations": [list(p) for p in pairs],
        "cases": results,
    }
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, out_path)
    print(f"oracle: torch {torch.__version__}: {len(results)} cases -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
