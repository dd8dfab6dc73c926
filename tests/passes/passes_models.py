"""Models shared by the shape_prop and graph_drawer oracles: the small ones
written here (their C++ twins are in the tests), and the torchvision corpus as
tests/models/oracle.py builds it."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

import torch  # noqa: E402  (the caller has checked that torch imports)
import torch.fx  # noqa: E402


def models_oracle():
    """tests/models/oracle.py, by path (tests/conformance has an oracle.py too)."""
    import importlib.util
    sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))
    spec = importlib.util.spec_from_file_location('models_oracle', os.path.join(HERE, '..', 'models', 'oracle.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Small(torch.nn.Module):
    """conv -> bn -> relu -> mean, then a Linear and a cat: two outputs (shape_prop_test.cpp's Small)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        z = torch.relu(self.bn(self.conv(x)))
        z = z.mean((2, 3))
        return self.lin(z) + y, torch.cat([z, z], dim=1)


def small_inputs():
    return (torch.randn(2, 3, 5, 5), torch.randn(2, 2))


def corpus():
    """name -> (model in eval mode, inputs), the corpus of tests/models/oracle.py."""
    import torchvision.models as tvm
    mo = models_oracle()
    out = {}
    for name, build in (('resnet18', tvm.resnet18), ('mobilenet_v2', tvm.mobilenet_v2), ('vit', mo.vit)):
        torch.manual_seed(0)
        model = build().eval()
        out[name] = (model, (torch.randn(mo.MODELS[name][1]),))
    return out


def pairs():
    """The normalizations of tests/conformance/normalizations.py."""
    sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))
    import normalizations
    return normalizations.normalizations(normalizations.functional_targets())
