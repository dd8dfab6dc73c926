"""The one place where torch.fx 2.14's text is rewritten before fxcpp's is compared to it.

fxcpp aims to print exactly what torch.fx prints. Where the two differ by design
(never by accident), the difference is listed here, with the reason, and the oracle
rewrites torch.fx's text accordingly. docs/conformance.md shows the same table.

Each normalization is (torch.fx text, fxcpp text, why). Texts are replaced as whole
tokens: a qualified name is only replaced where it is not part of a longer name.
"""

import re

# Pairs that do not depend on the cases: none since torch.fx 2.x.
FIXED = []


def functional_pairs(targets):
    """For each torch.nn.functional.X target used, the name torch.fx 2.14 prints for it, if different.

    In torch 2.14 several functions of torch.nn.functional (gelu, linear, softplus,
    conv2d, ...) are the C++ builtins of torch._C._nn or torch themselves, so torch.fx
    prints their __module__ (torch._C._nn.gelu, torch.conv2d). fxcpp knows a target only by the name it was given
    and prints torch.nn.functional.gelu. The pairs are computed, not listed, so that any
    new case using such a function is normalized the same way.
    """
    import torch.nn.functional as F
    from torch.fx.node import _get_qualified_name

    pairs = []
    for target in sorted(set(targets)):
        if not target.startswith("torch.nn.functional."):
            continue
        fn = getattr(F, target[len("torch.nn.functional."):])
        qualified = _get_qualified_name(fn)
        if qualified != target:
            pairs.append((qualified, target,
                          f"torch 2.14's F.{fn.__name__} is the builtin {qualified}; torch.fx prints the "
                          f"builtin's module, fxcpp the public name {target}."))
    return pairs


def functional_targets():
    """Every torch.nn.functional.X function, so that any of them a traced model calls is normalized."""
    import types
    import torch.nn.functional as F
    kinds = (types.FunctionType, types.BuiltinFunctionType)
    return ['torch.nn.functional.' + n for n in dir(F) if not n.startswith('_') and isinstance(getattr(F, n), kinds)]


def normalizations(targets):
    """Every (torch.fx text, fxcpp text, why) that applies to cases using these call_function targets."""
    return FIXED + functional_pairs(targets)


def apply(text, pairs):
    """Rewrites torch.fx's text into what fxcpp is expected to print."""
    for old, new, _ in pairs:
        if re.fullmatch(r"[\w.]+", old):
            # A qualified name: not when preceded or followed by more of a name.
            text = re.sub(r"(?<![\w.])" + re.escape(old) + r"(?![\w])", new, text)
        else:
            text = text.replace(old, new)
    return text
