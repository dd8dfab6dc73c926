#!/usr/bin/env python3
"""torch.fx 2.14's fuse and remove_dropout (torch.fx.experimental.optimization)
on the models of fuse_test.cpp and on torchvision's resnet18 / mobilenet_v2.
LinearBn runs fuse's loop with a fuse_linear_bn_eval that also takes a
BatchNorm without affine parameters, which torch's own does not."""
import copy

import simplify_oracle as so
import torch
import torch.fx as fx
import torch.nn as nn
from torch.fx.experimental import optimization as opt
from torch.nn.utils.fusion import fuse_linear_bn_weights


def fuse_linear_bn_eval(linear, bn):
    """torch.nn.utils.fusion.fuse_linear_bn_eval, also for a BatchNorm without
    affine parameters (torch's fails on bn.weight None, in 2.14 as in 1.13;
    fxcpp uses ones and zeros, as fuse_conv_bn_weights does)."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(linear)
    w = bn.weight if bn.weight is not None else torch.ones_like(bn.running_mean)
    b = bn.bias if bn.bias is not None else torch.zeros_like(bn.running_mean)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                      bn.running_var, bn.eps, w, b)
    return fused


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3)
        self.b1 = nn.BatchNorm1d(4)
        self.c2 = nn.Conv2d(3, 4, 3, bias=False)
        self.b2 = nn.BatchNorm2d(4)
        self.c3 = nn.Conv3d(3, 4, 3)
        self.b3 = nn.BatchNorm3d(4)
        self.shared = nn.Conv2d(3, 4, 3)
        self.shared_bn = nn.BatchNorm2d(4)
        self.untracked = nn.Conv2d(3, 4, 3)
        self.untracked_bn = nn.BatchNorm2d(4, track_running_stats=False)
        self.mixed = nn.Conv2d(3, 4, 3)

    def forward(self, x1, x2, x3):
        a = self.b1(self.c1(x1))
        b = self.b2(self.c2(x2))
        c = self.b3(self.c3(x3))
        s = self.shared(x2)
        d = self.shared_bn(s) + s
        e = self.untracked_bn(self.untracked(x2))
        f = torch.relu(self.mixed(x2))
        return (a, b, c, d, e, f)


class LinearBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 6)
        self.bn = nn.BatchNorm1d(6)
        self.lin2 = nn.Linear(6, 3, bias=False)
        self.bn2 = nn.BatchNorm1d(3, affine=False)

    def forward(self, x):
        return self.bn2(self.lin2(torch.relu(self.bn(self.lin(x)))))


class Drops(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.2)
        self.drop2d = nn.Dropout2d(0.2)
        self.drop_1 = nn.Dropout(0.3)

    def forward(self, x):
        y = self.drop(self.lin(x))
        z = self.drop2d(y.unsqueeze(0))
        return self.drop_1(y) + torch.relu(self.drop(y)) + z.squeeze(0)


def fuse_with_linear(model):
    """torch.fx 2.14's fuse (its four patterns, Linear+BatchNorm1d last), with
    the fuse_linear_bn_eval above."""
    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
                (nn.Linear, nn.BatchNorm1d)]
    model = copy.deepcopy(model)
    fx_model = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in patterns:
        for node in new_graph.nodes:
            if opt.matches_module_pattern(pattern, node, modules):
                if len(node.args[0].users) > 1:
                    continue
                first = modules[node.args[0].target]
                bn = modules[node.target]
                if not bn.track_running_stats:
                    continue
                if isinstance(first, nn.Linear):
                    fused = fuse_linear_bn_eval(first, bn)
                else:
                    fused = opt.fuse_conv_bn_eval(first, bn)
                opt.replace_node_module(node.args[0], modules, fused)
                node.replace_all_uses_with(node.args[0])
                new_graph.erase_node(node)
    return fx.GraphModule(fx_model, new_graph)


def entry(gm):
    return {'graph': so.text(str(gm.graph)), 'code': so.text(gm.code)}


def main():
    import torchvision.models as tvm
    out = {}
    torch.manual_seed(0)
    out['ConvBn'] = entry(opt.fuse(ConvBn().eval()))
    out['LinearBn'] = entry(fuse_with_linear(LinearBn().eval()))
    out['Drops'] = entry(opt.remove_dropout(Drops()))
    for name in ('resnet18', 'mobilenet_v2'):
        model = getattr(tvm, name)().eval()
        out[name] = entry(opt.fuse(model))
        out[name]['before'] = so.text(str(fx.symbolic_trace(model).graph))
    out['mobilenet_v2_no_dropout'] = entry(opt.remove_dropout(tvm.mobilenet_v2().eval()))
    so.write(out)


if __name__ == '__main__':
    main()
