"""Leaf modules as fxcpp stores them: torch.nn's class name and every
constructor argument by keyword.

    describe(nn.Conv2d(3, 8, 3))  ->  ('torch.nn.Conv2d', {'in_channels': 3, 'out_channels': 8,
                                       'kernel_size': (3, 3), 'stride': (1, 1), ...})
    construct('torch.nn.Conv2d', {...})  ->  Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))

The C++ half is fx::module_spec / fx::make_module (include/fx/module_spec.h),
reading each class's traits (include/fx/nn/module_traits.h);
both know the same classes (TYPES) and read the same arguments, in
__init__'s order. Most arguments are attributes of the same name; the few
that are not are read in _EXCEPTIONS.
"""
import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F

# Containers: their children are described apart, so they have no arguments.
CONTAINERS = ('torch.nn.Module', 'torch.nn.Sequential', 'torch.nn.ModuleList', 'torch.nn.ModuleDict')

# The leaf classes of fxcpp's fx::nn, each with a traits record in src/nn/<family>_traits.cpp;
# tests/nn's ModuleSpec.EveryTypeIsChecked fails until this list and the records agree.
LEAVES = tuple('torch.nn.' + name for name in (
    'ReLU', 'ReLU6', 'LeakyReLU', 'GELU', 'SiLU', 'Mish', 'Hardswish', 'Hardsigmoid', 'Sigmoid', 'Tanh',
    'Softmax', 'LogSoftmax', 'MultiheadAttention', 'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d',
    'ConvTranspose2d', 'Dropout', 'Dropout2d', 'Embedding', 'EmbeddingBag', 'Identity', 'Linear',
    'modules.linear.NonDynamicallyQuantizableLinear', 'Bilinear', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d',
    'InstanceNorm2d', 'LayerNorm', 'GroupNorm', 'MaxPool1d', 'MaxPool2d', 'AvgPool2d', 'AdaptiveAvgPool1d',
    'AdaptiveAvgPool2d', 'LSTM', 'GRU', 'Flatten', 'Unflatten', 'Upsample', 'PixelShuffle',
    'TransformerEncoderLayer'))

TYPES = CONTAINERS + LEAVES

_SKIPPED = ('self', 'device', 'dtype')


def type_name(module):
    """'torch.nn.Conv2d' for an nn.Conv2d: the public name under which torch.nn exports its class."""
    cls = type(module)
    if cls is nn.Module:
        return 'torch.nn.Module'
    if getattr(nn, cls.__name__, None) is cls:
        return 'torch.nn.' + cls.__name__
    return cls.__module__ + '.' + cls.__qualname__


def _transformer_activation(m):
    # PyTorch keeps the function, not the string it was given.
    if m.activation is F.relu:
        return 'relu'
    if m.activation is F.gelu:
        return 'gelu'
    raise ValueError(f'torch.nn.TransformerEncoderLayer: activation {m.activation!r} is not relu or gelu; '
                     'fxcpp stores only those two')


def _bias_given(m):
    # `bias` is a flag of the constructor; the module holds a tensor or None (RNNs keep the flag).
    # The norms of torch 2.x take it too and hold None when they are not affine, whatever it was:
    # False then rebuilds the same module.
    return m.bias if isinstance(m.bias, bool) else m.bias is not None


# Arguments that are not an attribute of the same name: type -> {argument: reader}.
_EXCEPTIONS = {
    'torch.nn.MultiheadAttention': {
        'bias': lambda m: m.in_proj_bias is not None,
        'add_bias_kv': lambda m: m.bias_k is not None,
    },
    # Only the children hold most of these.
    'torch.nn.TransformerEncoderLayer': {
        'd_model': lambda m: m.self_attn.embed_dim,
        'nhead': lambda m: m.self_attn.num_heads,
        'dim_feedforward': lambda m: m.linear1.out_features,
        'dropout': lambda m: float(m.dropout.p),
        'activation': _transformer_activation,
        'layer_norm_eps': lambda m: float(m.norm1.eps),
        'batch_first': lambda m: m.self_attn.batch_first,
        # torch 2.x hands `bias` to the linears and the layer norms and keeps no flag of its own.
        'bias': lambda m: m.linear1.bias is not None,
    },
}

# LSTM's and GRU's __init__ take *args, **kwargs and hand them to RNNBase's.
_RNN_PARAMETERS = ('input_size', 'hidden_size', 'num_layers', 'bias', 'batch_first', 'dropout', 'bidirectional')
_PARAMETERS = {
    'torch.nn.LSTM': _RNN_PARAMETERS + ('proj_size',),
    'torch.nn.GRU': _RNN_PARAMETERS,
    'torch.nn.Identity': (),
}

# Arguments that are floats though a default of None hides it.
_FLOATS = {'max_norm'}


def _parameters(cls, name):
    """The constructor's parameters fxcpp stores, in order, each with its default (inspect's empty if none)."""
    if name in _PARAMETERS:
        rnn = inspect.signature(nn.RNNBase.__init__).parameters
        return [(p, rnn[p].default if p in rnn else inspect.Parameter.empty) for p in _PARAMETERS[name]]
    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name in _SKIPPED or p.name.startswith('_') or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append((p.name, p.default))
    return out


def _normalize(value, default, arg):
    # C++ holds sizes as tuples and floats as doubles; say so here too, so both describe alike.
    if isinstance(value, (list, torch.Size)):
        return tuple(value)
    if isinstance(value, int) and not isinstance(value, bool) and (isinstance(default, float) or arg in _FLOATS):
        return float(value)
    return value


def describe(module):
    """(type name, {argument: value}) for a torch.nn module fxcpp knows: every
    constructor argument by keyword, in __init__'s order; tuples stay tuples.
    Raises ValueError for any other module."""
    name = type_name(module)
    if name not in TYPES:
        raise ValueError(f'{name} is not a torch.nn module that fxcpp knows how to construct; use torch.nn '
                         'modules of fxcpp\'s list (fxcpp.modules.TYPES), or let torch.fx trace through it')
    if name in CONTAINERS:
        # A bare nn.Module that holds tensors itself is more than a container: they would be lost.
        if name == 'torch.nn.Module' and (next(module.parameters(recurse=False), None) is not None
                                          or next(module.buffers(recurse=False), None) is not None):
            raise ValueError('a torch.nn.Module with parameters or buffers of its own is not a plain container; '
                             'fxcpp cannot construct it')
        return name, {}
    readers = _EXCEPTIONS.get(name, {})
    kwargs = {}
    for arg, default in _parameters(type(module), name):
        if arg in readers:
            value = readers[arg](module)
        elif arg == 'bias':
            value = _bias_given(module)
        elif hasattr(module, arg):
            value = getattr(module, arg)
        else:
            raise ValueError(f'{name}: cannot read its constructor argument {arg!r} back from the module')
        kwargs[arg] = _normalize(value, default, arg)
    return name, kwargs


def _tuples(value):
    # A file format may have turned tuples into lists; torch.nn wants tuples back.
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def construct(type_name, kwargs):
    """The module `type_name(**kwargs)`, freshly initialised. Raises ValueError for a type fxcpp does not know."""
    if type_name not in TYPES:
        raise ValueError(f'unknown module type {type_name!r}; fxcpp constructs only fxcpp.modules.TYPES')
    cls = torch
    for part in type_name.split('.')[1:]:
        cls = getattr(cls, part)
    return cls(**{k: _tuples(v) for k, v in kwargs.items()})
