#!/usr/bin/env python3
"""The torch.fx 2.14 side of the torchvision ports (models/): for each model,
builds torchvision 0.29's original (torch.manual_seed(0), eval mode), traces it
and writes, into the directory named on the command line:

  expected.json       per model: graph text, code and str(GraphModule), normalized
                      as tests/conformance/normalizations.py says; the input shape
  <name>.state.pt     torch.save(model.state_dict())
  <name>.io.pt        torch.save({'input': x, 'output': model(x)}) for a fixed input x
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    import torchvision.models as tvm
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402


def unpacking_proxies_on_python_311():
    """Kept for the oracles that still call it (tests/corpus, tests/passes): it
    patched torch.fx 1.13, whose Proxy.__iter__ found the UNPACK_SEQUENCE of
    `n, c, h, w = x.size()` at index f_lasti // 2, wrong on Python 3.11.
    torch.fx >= 2.0 finds it by offset itself, so with torch 2.x there is
    nothing to patch and torch.fx's own behaviour is the oracle's."""
    if int(torch.__version__.split('.')[0]) >= 2:
        return
    raise RuntimeError('the oracles need torch.fx >= 2.0, found torch ' + torch.__version__)


class Pooling(torch.nn.Module):
    """The pooling modules in configurations the models do not use (models_test.cpp's Pooling)."""

    def __init__(self):
        super().__init__()
        self.max1 = torch.nn.MaxPool1d(3, 2, 1, 1, False, ceil_mode=True)
        self.max2 = torch.nn.MaxPool2d((3, 2), (2, 1), (1, 0), (1, 2))
        self.avg = torch.nn.AvgPool2d(3, 2, 1, False, count_include_pad=False)
        self.adaptive1 = torch.nn.AdaptiveAvgPool1d(5)
        self.adaptive2 = torch.nn.AdaptiveAvgPool2d((None, 3))

    def forward(self, x):
        s = x.flatten(2)
        return torch.cat([self.max2(x).flatten(1), self.avg(x).flatten(1), self.adaptive2(x).flatten(1),
                          self.max1(s).flatten(1), self.adaptive1(s).flatten(1)], 1)


def vit():
    """A small torchvision VisionTransformer. Its head is zero-initialized, which
    would make every output 0: give it weights, so the outputs say something."""
    model = tvm.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                                  num_classes=10)
    torch.nn.init.normal_(model.heads.head.weight, std=0.1)
    torch.nn.init.normal_(model.heads.head.bias, std=0.1)
    return model


# name -> (builder, input shape). Inputs are as small as the models allow:
# 64x64 leaves alexnet's and vgg's features at least 1x1 before their adaptive pools.
MODELS = {
    'pooling': (Pooling, (2, 3, 9, 11)),
    'resnet18': (tvm.resnet18, (1, 3, 64, 64)),
    'resnet50': (tvm.resnet50, (1, 3, 64, 64)),
    'alexnet': (tvm.alexnet, (1, 3, 64, 64)),
    'vgg11': (tvm.vgg11, (1, 3, 64, 64)),
    'squeezenet1_0': (tvm.squeezenet1_0, (1, 3, 64, 64)),
    'shufflenet_v2_x1_0': (tvm.shufflenet_v2_x1_0, (1, 3, 64, 64)),
    'mobilenet_v2': (tvm.mobilenet_v2, (1, 3, 64, 64)),
    'densenet121': (tvm.densenet121, (1, 3, 64, 64)),
    'vit': (vit, (2, 3, 32, 32)),
}


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    only = set(sys.argv[2:])
    pairs = normalizations.normalizations(normalizations.functional_targets())
    expected = {}
    for name, (build, shape) in MODELS.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = build().eval()
        gm = torch.fx.symbolic_trace(model)
        expected[name] = {
            'graph': normalizations.apply(str(gm.graph), pairs),
            'code': normalizations.apply(gm.code, pairs),
            'str': normalizations.apply(str(gm), pairs),
            'input_shape': list(shape),
        }
        torch.save(model.state_dict(), os.path.join(out_dir, name + '.state.pt'))
        torch.manual_seed(1)
        x = torch.randn(shape)
        with torch.no_grad():
            y = model(x)
        torch.save({'input': x, 'output': y}, os.path.join(out_dir, name + '.io.pt'))
    with open(os.path.join(out_dir, 'expected.json'), 'w') as f:
        json.dump(expected, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
