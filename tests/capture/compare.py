#!/usr/bin/env python3
"""Compares fxcpp's captured graphs (actual.json, written by
fx_capture_conformance) with make_fx's (expected.json, written by oracle.py),
after the textual normalizations docs/capture.md lists. Prints a unified diff
for each program that differs; exits 1 if any does."""
import difflib
import json
import re
import sys

# Python's argument parser fills in `pin_memory = False` on the factory
# calls Python code makes (nn.LSTM's torch.zeros, autograd.grad's
# torch.ones_like); C++ callers leave it None, and it is dropped (from the
# code, `pin_memory = False`, and the graph's kwargs, `pin_memory: False`).
PIN_MEMORY = re.compile(r"(, )?\bpin_memory(?: = |: )False\b(, )?")
# The gradient autograd.grad starts from: Python's torch.autograd.grad makes
# it with ones_like(memory_format=torch.preserve_format), C++'s
# torch::autograd::grad with LEGACY_CONTIGUOUS_MEMORY_FORMAT.
ONES_LIKE_FORMAT = re.compile(r"(torch\.ops\.aten\.ones_like\.default\b.*memory_format(?: = |: )torch\.)preserve_format")
# Python binds `x * 2` to mul.Tensor with a wrapped number; C++'s operators
# with a Scalar call the .Scalar overload.
SCALAR_OVERLOAD = re.compile(r"(torch\.ops\.aten\.(?:add|sub|mul|div|rsub)_?)\.Scalar\b")


def normalize(text):
    lines = []
    for line in text.splitlines(True):
        line = PIN_MEMORY.sub(lambda m: ", " if m.group(1) and m.group(2) else "", line)
        line = ONES_LIKE_FORMAT.sub(r"\1contiguous_format", line)
        lines.append(SCALAR_OVERLOAD.sub(r"\1.Tensor", line))
    return "".join(lines)


# Programs whose C++ side runs other ATen code than the Python original, for
# reasons outside capture; they must still differ (so that a fix is noticed),
# and their captured graphs are still checked against eager runs in C++.
KNOWN_DIFFERENCES = {}


def main():
    expected = json.load(open(sys.argv[1]))
    actual = json.load(open(sys.argv[2]))
    failed = 0
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            print(f'{name}: not captured by the C++ side')
            failed += 1
            continue
        if name in KNOWN_DIFFERENCES:
            if normalize(want['code']) == normalize(got['code']):
                failed += 1
                print(f'{name}: now the same as make_fx; remove it from KNOWN_DIFFERENCES')
            else:
                print(f'{name}: differs as expected: {KNOWN_DIFFERENCES[name]}')
            continue
        for key in ('graph', 'code', 'subgraphs'):
            if key == 'subgraphs':  # cond's branches, while_loop's condition and body
                a = ''.join(f'{k}:{v}' for k, v in sorted(want.get(key, {}).items()))
                b = ''.join(f'{k}:{v}' for k, v in sorted(got.get(key, {}).items()))
                a, b = normalize(a), normalize(b)
            else:
                a, b = normalize(want[key]), normalize(got[key])
            if a != b:
                failed += 1
                print(f'--- {name} ({key}) differs: make_fx (-) vs fxcpp (+)')
                sys.stdout.writelines(difflib.unified_diff(a.splitlines(True), b.splitlines(True), n=1))
                break
        else:
            print(f'{name}: same as make_fx')
    print(f'{len(expected) - failed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
