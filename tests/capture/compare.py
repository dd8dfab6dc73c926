#!/usr/bin/env python3
"""Compares fxcpp's captured graphs (actual.json, written by
fx_capture_conformance) with make_fx's (expected.json, written by oracle.py),
after the textual normalizations docs/capture.md lists. Prints a unified diff
for each program that differs; exits 1 if any does."""
import difflib
import json
import re
import sys

# Python's bindings spell out a factory's TensorOptions (dtype, layout,
# device, pin_memory, memory_format) where C++ callers leave them None, or
# pass others (backward's ones_like: preserve_format from Python,
# contiguous_format from C++): on factory calls these keywords are dropped.
FACTORY = re.compile(r"torch\.ops\.aten\.(ones|zeros|empty|full|rand|randn|arange|scalar_tensor)(_like)?\.")
OPTION = r"(dtype|layout|device|pin_memory|memory_format)( = |: )(torch\.\w+|device\(type='\w+'\)|\w+)"
# Python binds `x * 2` to mul.Tensor with a wrapped number; C++'s operators
# with a Scalar call the .Scalar overload.
SCALAR_OVERLOAD = re.compile(r"(torch\.ops\.aten\.(?:add|sub|mul|div|rsub)_?)\.Scalar\b")


def normalize(text):
    lines = []
    for line in text.splitlines(True):
        if FACTORY.search(line):
            line = re.sub(", " + OPTION, "", line)
            line = re.sub(OPTION + "(, )?", "", line)
        lines.append(SCALAR_OVERLOAD.sub(r"\1.Tensor", line))
    return "".join(lines)


# Programs whose C++ side runs other ATen code than the Python original, for
# reasons outside capture; they must still differ (so that a fix is noticed),
# and their captured graphs are still checked against eager runs in C++.
KNOWN_DIFFERENCES = {
    "encoder_layer_eval": "fx::nn::MultiheadAttention runs LibTorch's C++ multi_head_attention_forward, which "
                          "projects q, k and v separately; Python 1.13's projects them in one matmul",
    "encoder_layer_grad": "as encoder_layer_eval",
    "lstm_grad": "as lstm_forward",
    "output_alias_of_updated_base": "torch 1.13's functionalize returns the alias `a` as it was before the "
                                    "update of `y` through `a[1:]` (a stale value: the graph's second output "
                                    "differs from eager's); fxcpp replays `a` from the updated `y`",
    "lstm_forward": "ATen's linear decomposition adds the bias with add_ for plain tensors and with add for "
                    "tensor subclasses (make_fx's tensors are Python subclasses)",
}


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
        for key in ('graph', 'code'):
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
