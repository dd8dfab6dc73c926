#!/usr/bin/python3
"""Runtime oracle: evaluates every call of cases.py with real torch, the way a
torch.fx GraphModule would (targets resolved by their qualified names), and
writes what fxcpp's runtime must reproduce:

    $FXCPP_PYTHON oracle.py OUT_DIR

OUT_DIR/expected.json  {"torch_version", "cases": [{"name", "family", "kind",
                        "target", "args", "kwargs", "result" | "error",
                        "self_after", "rtol"}]}
OUT_DIR/tensors.pt     a tuple of every tensor the JSON names as {"tensor": i}
                        (torch.save; LibTorch reads it with torch::pickle_load).

Values in JSON: numbers, true/false, null, strings, [list], {"tuple": [...]}
(with "names" for torch.return_types), {"size": [...]}, {"dict": [[k, v]]},
{"float": "inf"|"-inf"|"nan"}, {"complex": [re, im]}, {"dtype": name},
{"device": str}, {"slice": [start, stop, step]}, {"ellipsis": true},
{"tensor": i}. Exits 77 (ctest: skipped) when torch cannot be imported.
"""

import importlib
import json
import math
import os
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    out_dir = sys.argv[1]
    for f in ("expected.json", "tensors.pt"):
        try:
            os.remove(os.path.join(out_dir, f))
        except FileNotFoundError:
            pass
    import warnings
    warnings.filterwarnings("ignore")
    try:
        import torch
    except ImportError:
        print("torch is not importable by", sys.executable)
        return SKIP
    import cases

    dtype_names = {getattr(torch, n): n for n in (
        "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128",
        "bool", "bfloat16")}
    tensors = []

    def enc(v):
        if isinstance(v, torch.Tensor):
            tensors.append(v.detach().clone() if v.requires_grad else v.clone())
            return {"tensor": len(tensors) - 1}
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            if math.isinf(v):
                return {"float": "inf" if v > 0 else "-inf"}
            if math.isnan(v):
                return {"float": "nan"}
            return v
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, torch.Size):
            return {"size": list(v)}
        if isinstance(v, tuple):
            d = {"tuple": [enc(e) for e in v]}
            if type(v).__module__ == "torch.return_types":
                d["names"] = _ordered_fields(v)
            return d
        if isinstance(v, list):
            return [enc(e) for e in v]
        if isinstance(v, dict):
            return {"dict": [[k, enc(e)] for k, e in v.items()]}
        if isinstance(v, torch.dtype):
            return {"dtype": dtype_names[v]}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, slice):
            return {"slice": [enc(v.start), enc(v.stop), enc(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": True}
        raise TypeError("cannot encode %r" % (v,))

    def make(v):
        if isinstance(v, cases.T):
            return v.make()
        if isinstance(v, tuple):
            return tuple(make(e) for e in v)
        if isinstance(v, list):
            return [make(e) for e in v]
        if isinstance(v, dict):
            return {k: make(e) for k, e in v.items()}
        return v

    def resolve(target):
        if target.startswith("torch.ops."):
            obj = torch.ops
            for part in target[len("torch.ops."):].split("."):
                obj = getattr(obj, part)
            return obj
        module, _, name = target.rpartition(".")
        return getattr(importlib.import_module(module), name)

    out = []
    names = {}
    for family, kind, target, args, kwargs, options in cases.CASES:
        n = names.get(target, 0)
        names[target] = n + 1
        name = "%s:%s#%d" % (family, target, n)
        a = [make(x) for x in args]
        kw = {k: make(v) for k, v in kwargs.items()}
        rec = {"name": name, "family": family, "kind": kind, "target": target, "args": [enc(x) for x in a],
               "kwargs": [[k, enc(v)] for k, v in kw.items()], "rtol": options.get("rtol", 1e-5)}
        # the call works on copies, so that in-place calls leave the recorded inputs intact
        ca = [x.clone() if isinstance(x, torch.Tensor) else x for x in a]
        try:
            if kind == "method":
                r = getattr(ca[0], target)(*ca[1:], **kw)
            else:
                r = resolve(target)(*ca, **kw)
        except Exception as e:  # noqa: BLE001
            if not options.get("error"):
                print("case %s raised unexpectedly: %r" % (name, e))
                return 1
            rec["error"] = "%s: %s" % (type(e).__name__, e)
        else:
            if options.get("error"):
                print("case %s should raise but returned %r" % (name, r))
                return 1
            rec["result"] = enc(r)
            if options.get("inplace"):
                rec["self_after"] = enc(ca[0])
        out.append(rec)

    torch.save(tuple(tensors), os.path.join(out_dir, "tensors.pt"))
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": out}, f, indent=1)
    fam = {}
    for c in out:
        fam[c["family"]] = fam.get(c["family"], 0) + 1
    print("%d cases, %d tensors: %s" % (len(out), len(tensors), ", ".join("%s %d" % kv for kv in fam.items())))
    return 0


def _ordered_fields(r):
    """The field names of a torch.return_types structseq, in order."""
    fields = []
    for i in range(len(r)):
        for f in ("values", "indices", "solution", "Q", "R", "U", "S", "V", "Vh", "L", "eigenvalues",
                  "eigenvectors", "sign", "logabsdet", "mantissa", "exponent", "output", "counts"):
            if hasattr(r, f) and getattr(r, f) is r[i]:
                fields.append(f)
                break
    return fields


if __name__ == "__main__":
    sys.exit(main())
