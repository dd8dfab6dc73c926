#!/usr/bin/env python3
"""torch.fx 2.14's CSEPass on the models of cse_test.cpp. Random calls are
given to CSEPass as banned ops (fxcpp never merges them); Mutated, where
torch.fx merges two reads around an in-place write, is left unchanged by
fxcpp, so only its graph before is recorded."""
import simplify_oracle as so
import torch
import torch.fx
import torch.nn as nn
from torch.fx.passes.dialect.common.cse_pass import CSEPass


class Dup(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        a = x + y
        b = x + y
        c = torch.relu(a)
        d = torch.relu(b)
        e = x.sum(dim=1)
        f = x.sum(dim=1)
        g = self.lin(x)
        h = self.lin(x)
        i = x + 1
        j = x + 2
        k = torch.cat([a, b], 1)
        m = torch.cat([b, a], 1)
        n = x.transpose(0, 1)
        o = x.transpose(1, 0)
        return (c + d, e * f, g - h, i, j, k, m, n, o)


class Random(nn.Module):
    def forward(self, x):
        a = torch.randn_like(x)
        b = torch.randn_like(x)
        c = x * 2
        d = x * 2
        return a + b + c + d


class Mutated(nn.Module):
    def forward(self, x):
        y = x.clone()
        a = y + 1
        y.add_(1)
        b = y + 1
        return a * b


def main():
    out = {}
    for cls, banned in ((Dup, set()), (Random, {torch.randn_like}), (Mutated, None)):
        torch.manual_seed(0)
        gm = torch.fx.symbolic_trace(cls())
        entry = {'before': so.text(str(gm.graph))}
        if banned is not None:
            result = CSEPass(banned)(gm)
            entry.update(graph=so.text(str(result.graph_module.graph)), code=so.text(result.graph_module.code),
                         modified=result.modified)
        out[cls.__name__] = entry
    import torchvision.models as tvm
    for name in ('resnet18', 'mobilenet_v2'):
        result = CSEPass()(torch.fx.symbolic_trace(getattr(tvm, name)().eval()))
        out[name] = {'graph': so.text(str(result.graph_module.graph)), 'code': so.text(result.graph_module.code),
                     'modified': result.modified}
    so.write(out)


if __name__ == '__main__':
    main()
