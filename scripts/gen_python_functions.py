#!/usr/bin/env python3
"""Writes src/ir/python_functions.inc, the table of the Python functions of
torch.nn.functional, torch.functional and torch (torch._assert,
torch.typename, torch.norm, ...). For each one it holds two things:
- the signature torch.fx's normalize_function sees: inspect.signature of
  the unwrapped function; a boolean-dispatched function as its if_true
  branch when both branches take the same parameters. NormalizeArgs binds
  call_function arguments to it;
- the call torch.fx records when a Proxy reaches the function: the target
  and the arguments its handle_torch_function call passes on (F.softmax(x,
  dim=-1) is recorded as softmax(x, dim=-1, _stacklevel=3, dtype=None)).
  Found by calling the function under a TorchFunctionMode with a marker
  object for each parameter; the mode sees which marker went where. A
  boolean-dispatched function (max_pool2d's return_indices) has one form per
  branch.

Run with the venv Python of scripts/env.sh (torch 2.14):

    $FXCPP_PYTHON scripts/gen_python_functions.py > src/ir/python_functions.inc

tests/passes/normalize_args_oracle.py checks the table against the running torch.
"""
import inspect
import math
import types
import warnings


def python_functions():
    """(qualified name, function) for every Python function of F, torch.functional and torch.

    The name is the one FX prints for the function, and for torch.X that is
    torch.functional's (torch.norm) also torch.X, the name C++ code calls."""
    import torch
    import torch.functional
    import torch.nn.functional as F
    out = []
    for mod, prefix in ((F, 'torch.nn.functional.'), (torch.functional, 'torch.functional.'), (torch, 'torch.')):
        for name in sorted(dir(mod)):
            fn = getattr(mod, name)
            # torch._assert is the one private function a traced graph calls
            if (name.startswith('_') and name != '_assert') or not isinstance(fn, types.FunctionType):
                continue
            if fn.__module__ != mod.__name__ and not (mod is torch and fn.__module__ == 'torch.functional'):
                continue  # imported from elsewhere
            out.append((prefix + name, fn))
    return out


def signature_for_analysis(fn):
    """What normalize_function binds to: None where it normalizes nothing."""
    from torch._jit_internal import boolean_dispatched

    def branches(f):  # torch.unique dispatches on return_inverse, then on return_counts
        if f not in boolean_dispatched:
            return [f]
        d = boolean_dispatched[f]
        return branches(d['if_true']) + branches(d['if_false'])
    implementations = branches(fn)
    if any(inspect.signature(f).parameters != inspect.signature(implementations[0]).parameters
           for f in implementations):
        return None
    sig = inspect.signature(inspect.unwrap(implementations[0]))
    supported = {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
    if any(p.kind not in supported for p in sig.parameters.values()):
        return None
    return sig


def cpp_value(v):
    """A default value as a C++ fx::Argument expression; None when it has none."""
    if v is None:
        return 'fx::None'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return f'int64_t{{{v}}}'
    if isinstance(v, float):
        if math.isinf(v):
            return ('-' if v < 0 else '') + 'std::numeric_limits<double>::infinity()'
        return f'double{{{v!r}}}'
    if isinstance(v, str):
        return 'std::string("' + v.replace('\\', '\\\\').replace('"', '\\"') + '")'
    if isinstance(v, (tuple, list)):
        items = [cpp_value(x) for x in v]
        if any(i is None for i in items):
            return None
        return ('fx::tuple' if isinstance(v, tuple) else 'fx::list') + '({' + ', '.join(items) + '})'
    return None


class _Marker:
    """Stands for one parameter; falsy for the flag of a boolean dispatch.
    A method called on it is what a Proxy would record (F.sigmoid returns
    input.sigmoid(), which torch.fx records as call_method sigmoid): the
    call is kept in `calls`, and its result is a _MethodResult. Taking its
    truth is what a Proxy refuses (torch.unique's inner dispatch on
    return_counts): the parameter is kept in `truths`."""

    def __init__(self, index, truth, calls, truths):
        self.index, self.truth, self.calls, self.truths = index, truth, calls, truths

    def __bool__(self):
        self.truths.append(self.index)
        return self.truth

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)

        def method(*args, **kwargs):
            self.calls.append((name, (self,) + args, kwargs))
            return _MethodResult()
        return method


class _MethodResult:
    pass


class _Recorded(Exception):
    pass


def recorded_form(fn, params, flag_value=None):
    """The call torch.fx records for fn: (target, is a method, [(keyword or None, parameter index or None,
    literal)], [indices of the parameters other than the flag whose truth it takes first]), or None where
    the function neither goes through handle_torch_function with its parameters nor returns what one
    method of a parameter returns."""
    import torch
    from torch.fx.node import _get_qualified_name
    from torch.overrides import TorchFunctionMode
    from torch._jit_internal import boolean_dispatched

    class Catch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            raise _Recorded(func, args, kwargs or {})

    flag = boolean_dispatched[fn]['arg_name'] if fn in boolean_dispatched else None
    calls, truths = [], []
    markers = [_Marker(i, True if p.name != flag else flag_value, calls, truths) for i, p in enumerate(params)]
    args = [m for p, m in zip(params, markers) if p.kind == p.POSITIONAL_OR_KEYWORD]
    kwargs = {p.name: m for p, m in zip(params, markers) if p.kind == p.KEYWORD_ONLY}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            with Catch():
                result = fn(*args, **kwargs)
    except _Recorded as r:
        if calls:  # a method first, then handle_torch_function: a Python body fxcpp does not run
            return None
        func, a, k = r.args
        method = False
    except Exception:  # it computes with its arguments first (len(input), input.dim() == 2)
        return None
    else:
        # One method of a parameter, whose result the function returns as it is.
        if len(calls) != 1 or not isinstance(result, _MethodResult):
            return None
        func, a, k = calls[0]
        method = True
    if not method and (not callable(func) or isinstance(func, torch._ops.OpOverload)):
        return None
    items = []
    for keyword, v in [(None, v) for v in a] + list(k.items()):
        if isinstance(v, _Marker):
            items.append((keyword, v.index, None))
        else:
            literal = cpp_value(v)
            if literal is None:
                return None
            items.append((keyword, None, literal))
    flag_index = next((i for i, p in enumerate(params) if p.name == flag), None)
    tested = sorted({i for i in truths if i != flag_index})
    return (func if method else _get_qualified_name(func)), method, items, tested


def cpp_form(form):
    if form is None:
        return 'std::nullopt'
    target, method, items, tested = form
    cells = []
    for keyword, index, literal in items:
        kw = f'"{keyword}"' if keyword is not None else 'nullptr'
        cells.append(f'{{{kw}, {index if index is not None else -1}, {literal or "fx::None"}}}')
    tail = ''
    if tested:
        tail = f', {"true" if method else "false"}, {{{", ".join(map(str, tested))}}}'
    elif method:
        tail = ', true'
    return f'fx::PythonFunction::Form{{"{target}", {{{", ".join(cells)}}}{tail}}}'


def main():
    import inspect as _inspect
    from torch._jit_internal import boolean_dispatched
    print('// Generated by scripts/gen_python_functions.py from torch 2.14: do not edit.')
    print('// {qualified name, supported, {{parameter, keyword-only, has default, default}...},')
    print('//  the recorded form, the boolean-dispatch flag (a parameter index or -1), the form when it is true}')
    for qualified, fn in python_functions():
        sig = signature_for_analysis(fn)
        if sig is None:
            print(f'{{"{qualified}", false, {{}}, std::nullopt, -1, std::nullopt}},')
            continue
        params = []
        ok = True
        for p in sig.parameters.values():
            kwonly = 'true' if p.kind == inspect.Parameter.KEYWORD_ONLY else 'false'
            if p.default is inspect.Parameter.empty:
                params.append(f'{{"{p.name}", {kwonly}, false, fx::None}}')
                continue
            d = cpp_value(p.default)
            if d is None:
                ok = False
                break
            params.append(f'{{"{p.name}", {kwonly}, true, {d}}}')
        if not ok:  # a default fxcpp cannot hold: leave the function unnormalized
            print(f'{{"{qualified}", false, {{}}, std::nullopt, -1, std::nullopt}},')
            continue
        plist = list(sig.parameters.values())
        flag = -1
        if_true = None
        if fn in boolean_dispatched:
            name = boolean_dispatched[fn]['arg_name']
            flag = next(i for i, p in enumerate(plist) if p.name == name)
            form = recorded_form(fn, plist, flag_value=False)
            if_true = recorded_form(fn, plist, flag_value=True)
        else:
            form = recorded_form(fn, plist)
        print(f'{{"{qualified}", true, {{' + ', '.join(params) + f'}}, {cpp_form(form)}, {flag}, {cpp_form(if_true)}}},')


if __name__ == '__main__':
    main()
