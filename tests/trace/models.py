"""Python originals of the C++ models in trace_test.cpp; oracle.py traces
them with torch.fx 2.14 to give the expected graph text and code."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx import Tracer


class MyModel(nn.Module):  # the FX tutorial's first example
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, x):
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


class SimpleNet(nn.Module):  # the tutorial's relu -> gelu example
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(10, 20)
        self.linear2 = nn.Linear(20, 10)

    def forward(self, x):
        x = torch.relu(self.linear1(x))
        x = torch.relu(self.linear2(x))
        return x


class BasicBlock(nn.Module):  # torchvision's ResNet block, with a downsample
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.downsample = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm2d(8))

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Attributes(nn.Module):  # parameters once, buffers per use, tensor constants
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.rand(3))
        self.register_buffer('scale', torch.ones(3))
        self.offset = torch.zeros(3)  # a plain tensor attribute

    def forward(self, x):
        y = x * self.w + self.w
        y = y * self.scale - self.scale
        return y + self.offset


class ParameterMath(nn.Module):  # computations on parameters alone are recorded
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(2.0))
        self.proj = nn.Parameter(torch.randn(4, 4))
        self.register_buffer('offset', torch.ones(4))

    def forward(self, x):
        scale = self.logit_scale.exp()
        w = self.proj.t() * 2
        return (x @ w) * scale + self.offset


class Constants(nn.Module):  # tensor constants named around the names already taken
    def __init__(self):
        super().__init__()
        self.register_buffer('_tensor_constant1', torch.ones(2))
        self._tensor_constant3 = torch.full((2,), 3.0)  # a plain tensor attribute
        self.c = [torch.full((2,), float(i)) for i in range(4)]  # a list: not attributes, so constants

    def forward(self, x):
        for t in self.c:
            x = x + t
        x = x * self.c[0]  # the same tensor again: the same name
        return x + self._tensor_constant1 + self._tensor_constant3


class Operations(nn.Module):  # operators, methods, kwargs, indexing, reflection
    def forward(self, x, y, scale=2.0):
        b = x.size(0)
        h = x.view(b, -1)
        ch = h.chunk(2, dim=1)
        a, c = ch[0], ch[1]  # indexed: FX 1.13 could not unpack a Proxy on Python 3.11
        z = torch.cat([a, c], dim=1) * scale
        z = 2 - z
        z = 1 / (z + 1e-05)
        z = -z
        s = z[:, 0:2]
        t = z[..., None]
        m = x.shape[1]
        w = torch.matmul(y, y.t()) @ y
        q = s.sum(dim=-1, keepdim=True) ** 2 // 3 % 5
        r = t.flatten(1).mean(dim=1) > 0.5
        return (q, r, m, w, F.gelu(z, approximate='tanh'))


class FunctionalDefaults(nn.Module):  # Python functions of torch: recorded with every keyword they pass on
    def forward(self, x):
        up = F.interpolate(x, scale_factor=2, mode='nearest')
        p = F.softmax(up, dim=-1)
        pooled, idx = F.max_pool2d(p, 2, return_indices=True)
        q = F.max_pool2d(p, kernel_size=2, stride=1)
        n = torch.norm(q, dim=-1)
        parts = torch.split(n, 2, 1)
        old = F.upsample(x, size=(4, 4))
        values, counts = torch.unique(idx, return_counts=True)
        return (pooled, idx, F.relu(parts[0]), old.norm(dim=1), F.dropout(q, 0.2, training=False), values, counts)


class DetectionHead(nn.Module):  # returns a dict, as detection heads do
    def __init__(self):
        super().__init__()
        self.cls = nn.Conv2d(4, 3, 1)
        self.box = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        logits = self.cls(x)
        out = {'logits': logits, 'scores': logits.sigmoid(), 'boxes': self.box(x).flatten(2)}
        out['count'] = x.size(0)
        return out


class Sequence(nn.Module):  # containers are traced through
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Dropout(0.1), nn.Identity()))
        self.flatten = nn.Flatten()

    def forward(self, x):
        return self.flatten(self.features(x))


def scaled_sum(x, y):  # recorded as one node: torch.fx.wrap below
    return (x + y) * 2


torch.fx.wrap('scaled_sum')


class Wrapped(nn.Module):  # a wrapped function inside a model
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return scaled_sum(self.linear(x), x).relu()


class LinearNotLeaf(Tracer):  # a custom leaf policy: trace into nn.Linear
    def is_leaf_module(self, m, qualname):
        return not isinstance(m, nn.Linear) and super().is_leaf_module(m, qualname)


class Specialized(nn.Module):  # concrete_args: flags, None and numbers
    def forward(self, x, flag=True, bias=None, n=2):
        if flag:
            x = x.relu()
        if bias is not None:
            x = x + bias
        return x * n


class Paired(nn.Module):  # concrete_args with structures: the graph takes their leaves
    def forward(self, x, flag, pair):
        if flag:
            x = x.relu()
        return (x + pair[0], [x * pair[1], x])


class Routed(nn.Module):  # concrete_args with a dict: its values read by key, a dict returned
    def forward(self, x, feats):
        return {'sum': x + feats['a'], 'parts': [feats['b'] * x, feats['a']]}


# name -> the concrete_args Tracer.trace gets for that model. (torch.fx, 1.13
# and 2.14 alike, cannot compile the code of a structured trace of a forward
# with defaults: its flattening statement repeats them, so Paired has none.)
CONCRETE_ARGS = {
    'specialized_flags': {'flag': False, 'bias': None, 'n': 3},
    'specialized_float': {'flag': True, 'n': 2.5},
    'paired_ph': {'flag': False, 'pair': [torch.fx.PH, torch.fx.PH]},
    'paired_mixed': {'flag': True, 'pair': (torch.fx.PH, 2.0)},
    'routed_dict': {'feats': {'b': torch.fx.PH, 'a': torch.fx.PH}},
}


class Holder(nn.Module):  # holds a parameter that another module owns too
    def __init__(self, w):
        super().__init__()
        self.w = w


class Shared(nn.Module):  # one module under two names, one parameter in two modules
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a
        self.holder = Holder(self.a.weight)

    def forward(self, x):
        return self.b(x) + self.holder.w


MODELS = {
    'my_model': (MyModel, None),
    'simple_net': (SimpleNet, None),
    'basic_block': (BasicBlock, None),
    'attributes': (Attributes, None),
    'parameter_math': (ParameterMath, None),
    'constants': (Constants, None),
    'operations': (Operations, None),
    'functional_defaults': (FunctionalDefaults, None),
    'detection_head': (DetectionHead, None),
    'sequence': (Sequence, None),
    'shared': (Shared, None),
    'wrapped': (Wrapped, None),
    'simple_net_linear_not_leaf': (SimpleNet, LinearNotLeaf),
    'sequence_linear_not_leaf': (Sequence, LinearNotLeaf),
    'specialized_flags': (Specialized, None),
    'specialized_float': (Specialized, None),
    'paired_ph': (Paired, None),
    'paired_mixed': (Paired, None),
    'routed_dict': (Routed, None),
}


# ---- torch.fx.Transformer: transformer_test.cpp's rewrites of symbolic_trace(model) ----

class NegSigmoid(nn.Module):  # the Transformer docstring's example
    def forward(self, x):
        return torch.sigmoid(x).neg()


class Mixed(nn.Module):  # leaf modules, a parameter, buffers, a constant, a dotted get_attr, a default
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.rand(4))
        self.register_buffer('scale', torch.ones(4))
        self.offset = torch.zeros(4)
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def forward(self, x, k=2.0):
        y = self.linear(x) * self.w + self.scale
        y = self.seq(y) - self.scale + self.offset
        z = torch.matmul(y, self.linear.weight)
        return (z * k, y.sum(dim=-1))


class ReluToGelu(torch.fx.Transformer):  # the FX tutorial's relu -> gelu, as a Transformer
    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return F.gelu(*args, **kwargs)
        return super().call_function(target, args, kwargs)


class NegSigmoidSwap(torch.fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target is torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == 'neg':
            return args[0].sigmoid(*args[1:], **kwargs)
        return super().call_method(target, args, kwargs)


# name -> (model, Transformer subclass) for oracle.py's transformed modules.
class DropBatchNorms:
    """Not a Transformer: erases BasicBlock's calls of bn2 and downsample.1
    (each input takes the place of its output), then
    gm.delete_all_unused_submodules() and gm.recompile()."""

    def __init__(self, gm):
        self.gm = gm

    def transform(self):
        for node in list(self.gm.graph.nodes):
            if node.op == 'call_module' and node.target in ('bn2', 'downsample.1'):
                node.replace_all_uses_with(node.args[0])
                self.gm.graph.erase_node(node)
        self.gm.delete_all_unused_submodules()
        self.gm.recompile()
        return self.gm


TRANSFORMS = {
    'xform_relu_to_gelu': (SimpleNet, ReluToGelu),
    'xform_neg_sigmoid_swap': (NegSigmoid, NegSigmoidSwap),
    'xform_identity_mixed': (Mixed, torch.fx.Transformer),
    'xform_identity_attributes': (Attributes, torch.fx.Transformer),
    'xform_identity_basic_block': (BasicBlock, torch.fx.Transformer),
    'delete_all_unused_submodules': (BasicBlock, DropBatchNorms),
}
