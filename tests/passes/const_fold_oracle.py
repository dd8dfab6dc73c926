#!/usr/bin/env python3
"""torch.fx 2.14's split_const_subgraphs (torch.fx.experimental.const_fold) on
the models of const_fold_test.cpp: the main graph, its code, the constant
subgraph and the name of the folded attribute."""
import simplify_oracle as so
import torch
import torch.nn as nn
from torch.fx.experimental import const_fold


class Simple(nn.Module):
    """The example of torch.fx's own const_fold tests."""
    def __init__(self):
        super().__init__()
        self.attr_1 = nn.Parameter(torch.tensor([[-0.9]]))
        self.attr_2 = nn.Parameter(torch.tensor([[17.1]]))

    def forward(self, x, y):
        a = self.attr_1 + self.attr_1
        x = x - a
        return x * y + self.attr_2


class Multi(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.w = nn.Parameter(torch.randn(3, 3))
        self.sub = nn.Module()
        self.sub.scale = nn.Parameter(torch.randn(3))

    def forward(self, x):
        wt = self.w.t()
        s = torch.relu(self.sub.scale) * 2
        y = self.lin(x) @ wt + s
        return y + wt.sum(), s


class Modules(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.proj = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        k = self.proj(self.w)
        return self.layers(x) @ k


class Nothing(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))

    def forward(self, x):
        return x * self.w + 1


def main():
    out = {}
    for cls in (Simple, Multi, Modules, Nothing):
        torch.manual_seed(0)
        gm = const_fold.split_const_subgraphs(cls())
        entry = {'graph': so.text(str(gm.graph)), 'code': so.text(gm.code)}
        if gm.const_subgraph_module is not None:
            entry['const_graph'] = so.text(str(gm.const_subgraph_module.graph))
            entry['attrs_name'] = gm.fx_const_folded_attrs_name
        out[cls.__name__] = entry
    so.write(out)


if __name__ == '__main__':
    main()
