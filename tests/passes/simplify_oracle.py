"""Shared by the oracles of the simplifying passes (dce, cse, const_fold, fuse):
imports torch (exit 77 without it) and writes graph texts normalized as
tests/conformance/normalizations.py says."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch  # noqa: F401
    import torch.fx  # noqa: F401
except ImportError:
    print('torch is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402

_PAIRS = normalizations.normalizations(normalizations.functional_targets())


def text(s):
    """torch.fx's text as fxcpp prints it."""
    return normalizations.apply(s, _PAIRS)


def write(out):
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
