#!/usr/bin/env python3
"""torch.fx 2.14's Graph.eliminate_dead_code on the models of dce_test.cpp,
and the intended result where 2.14 deletes in-place or random calls: the same
walk with those calls kept (fx/impurity.h lists the rules)."""
import operator

import simplify_oracle as so
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F


class DeadPure(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        a = x + 1
        torch.relu(a)
        self.w * x
        self.lin(x)
        x.sum()
        torch._assert(x.dim() == 2, "rank")
        return x * 2


class InPlace(nn.Module):
    def forward(self, x):
        y = x.clone()
        y.add_(1)
        torch.relu_(y)
        x + 1
        torch.randn_like(x)
        x.bernoulli()
        F.relu(y, inplace=True)
        F.dropout(x, 0.5, False)
        x.sum()
        return y


def intended_impure(node):
    """The rules of fx/impurity.h for the nodes of these models."""
    if node.op == 'call_method':
        return node.target.endswith('_') or node.target == 'bernoulli'
    if node.op == 'call_function':
        if node.target in (torch.relu_, torch.randn_like, operator.iadd):
            return True
        return node.kwargs.get('inplace', False) is True
    return False


def main():
    out = {}
    for cls in (DeadPure, InPlace):
        torch.manual_seed(0)
        gm = torch.fx.symbolic_trace(cls())
        before = so.text(str(gm.graph))
        fx_gm = torch.fx.symbolic_trace(cls())
        fx_changed = fx_gm.graph.eliminate_dead_code()
        fx_gm.recompile()
        changed = False
        for node in reversed(gm.graph.nodes):
            if not node.is_impure() and not intended_impure(node) and len(node.users) == 0:
                gm.graph.erase_node(node)
                changed = True
        gm.recompile()
        out[cls.__name__] = {'before': before, 'fx_graph': so.text(str(fx_gm.graph)), 'fx_changed': fx_changed,
                             'graph': so.text(str(gm.graph)), 'code': so.text(gm.code), 'changed': changed}
    so.write(out)


if __name__ == '__main__':
    main()
