#!/usr/bin/env python3
"""torch.fx 2.14's GraphModule.to_folder for the models of to_folder_test.cpp:
writes {name: {'module_py': text, 'pickled': [children torch.fx pickled]}} to
the JSON file named by argv[1]. The folder's path is written as <dir> in the
text, so that the test can compare it with its own folder's."""
import json
import os
import sys
import tempfile
import warnings

try:
    import torch
    import torch.fx
    import torchvision.models as tvm
except ImportError:
    print('torch or torchvision is not importable; skipping', file=sys.stderr)
    sys.exit(77)


class Small(torch.nn.Module):
    """Only torch.fx's safe reprs as children, plus a parameter and a buffer."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 8 * 8, 10)
        self.scale = torch.nn.Parameter(torch.ones(10))
        self.register_buffer('offset', torch.zeros(10))

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = x.flatten(1)
        return self.fc(x) * self.scale + self.offset


def vit():
    return tvm.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                                 num_classes=10)


MODELS = {'small': Small, 'resnet18': tvm.resnet18, 'vit': vit}


def main():
    out = {}
    for name, build in MODELS.items():
        gm = torch.fx.symbolic_trace(build().eval())
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, name + '_pkg')
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')  # the pickled children's warning
                gm.to_folder(folder, 'FxModule')
            with open(os.path.join(folder, 'module.py')) as f:
                text = f.read()
            pickled = sorted(p[:-3] for p in os.listdir(folder) if p.endswith('.pt') and p != 'state_dict.pt')
        out[name] = {'module_py': text.replace(folder, '<dir>'), 'pickled': pickled}
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
