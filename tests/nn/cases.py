"""The torch.nn modules fxcpp's fx::nn mirrors, each with its constructor
arguments and inputs. nn_test.cpp builds the same modules in C++ under the
same names; keep the two lists in step."""
import torch
import torch.nn as nn


def _t(*shape):
    return torch.randn(*shape)


def _long(high, *shape):
    return torch.randint(0, high, shape)


def _padding():
    # Key padding of a batch of 3 over 5 keys; no query sees only padding.
    return torch.tensor([[0, 0, 0, 0, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)


def _causal(n, dtype=torch.bool):
    mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    return mask if dtype == torch.bool else torch.zeros(n, n).masked_fill(mask, float('-inf'))


# name: (constructor, inputs (positional tensors), keyword arguments of the
# call, or the call itself: a function of the module and the inputs)
CASES = {
    'relu6': (lambda: nn.ReLU6(), lambda: [_t(3, 4) * 5], {}),
    'relu6_inplace': (lambda: nn.ReLU6(inplace=True), lambda: [_t(3, 4) * 5], {}),
    'gelu': (lambda: nn.GELU(), lambda: [_t(3, 4)], {}),
    'gelu_tanh': (lambda: nn.GELU(approximate='tanh'), lambda: [_t(3, 4)], {}),
    'layernorm': (lambda: nn.LayerNorm(8), lambda: [_t(2, 3, 8)], {}),
    'layernorm2': (lambda: nn.LayerNorm([3, 8], eps=1e-3, elementwise_affine=False), lambda: [_t(2, 3, 8)], {}),
    'mha': (lambda: nn.MultiheadAttention(8, 2), lambda: [_t(5, 3, 8), _t(4, 3, 8), _t(4, 3, 8)], {}),
    'mha_kv': (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, kdim=6, vdim=4,
                                             batch_first=True),
               lambda: [_t(3, 5, 8), _t(3, 7, 6), _t(3, 7, 4)], {}),
    # Self-attention (one packed projection) with both masks as bools, merged into one float mask for SDPA.
    'mha_self_masks': (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                       lambda: [_t(3, 5, 8), _padding(), _causal(5)],
                       lambda m, a: m(a[0], a[0], a[0], key_padding_mask=a[1], attn_mask=a[2], need_weights=False)),
    # is_causal without need_weights: the mask is dropped and SDPA told it is causal.
    'mha_causal': (lambda: nn.MultiheadAttention(8, 2),
                   lambda: [_t(5, 3, 8), _causal(5, torch.float32)],
                   lambda m, a: m(a[0], a[0], a[0], attn_mask=a[1], need_weights=False, is_causal=True)),
    # A key that is the value: the in-projection of key and value is one matrix product; weights per head.
    'mha_shared_kv': (lambda: nn.MultiheadAttention(8, 2),
                      lambda: [_t(4, 3, 8), _t(6, 3, 8)],
                      lambda m, a: m(a[0], a[1], a[1], average_attn_weights=False)),
    'hardswish': (lambda: nn.Hardswish(), lambda: [_t(3, 4) * 4], {}),
    'hardsigmoid': (lambda: nn.Hardsigmoid(), lambda: [_t(3, 4) * 4], {}),
    'silu': (lambda: nn.SiLU(), lambda: [_t(3, 4)], {}),
    'sigmoid': (lambda: nn.Sigmoid(), lambda: [_t(3, 4)], {}),
    'tanh': (lambda: nn.Tanh(), lambda: [_t(3, 4)], {}),
    'softmax': (lambda: nn.Softmax(dim=1), lambda: [_t(3, 4, 2)], {}),
    'logsoftmax': (lambda: nn.LogSoftmax(dim=-1), lambda: [_t(3, 4)], {}),
    'dropout': (lambda: nn.Dropout(0.3), lambda: [_t(3, 4)], {}),
    'dropout2d': (lambda: nn.Dropout2d(0.2), lambda: [_t(2, 3, 4, 4)], {}),
    'modulelist': (lambda: nn.ModuleList([nn.Linear(2, 3), nn.ReLU(), nn.BatchNorm2d(3)]), None, {}),
    'moduledict': (lambda: nn.ModuleDict({'conv': nn.Conv2d(1, 2, 3), 'act': nn.GELU()}), None, {}),
    'bilinear': (lambda: nn.Bilinear(3, 4, 5), lambda: [_t(6, 3), _t(6, 4)], {}),
    'conv1d': (lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1), lambda: [_t(2, 4, 9)], {}),
    'conv1d_reflect': (lambda: nn.Conv1d(4, 4, 3, padding=2, padding_mode='reflect', groups=2, bias=False),
                       lambda: [_t(2, 4, 9)], {}),
    'conv2d': (lambda: nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
               lambda: [_t(2, 3, 7, 7)], {}),
    'conv2d_circular': (lambda: nn.Conv2d(2, 4, 3, padding=1, padding_mode='circular'), lambda: [_t(1, 2, 5, 5)], {}),
    'conv3d': (lambda: nn.Conv3d(2, 4, 3, padding=1), lambda: [_t(1, 2, 4, 4, 4)], {}),
    'convt1d': (lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1), lambda: [_t(2, 4, 5)], {}),
    'convt2d': (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2), lambda: [_t(1, 4, 5, 5)],
                {'output_size': [10, 10]}),
    'bn1d': (lambda: nn.BatchNorm1d(4), lambda: [_t(5, 4)], {}),
    'bn2d': (lambda: nn.BatchNorm2d(3, eps=1e-3, momentum=None), lambda: [_t(2, 3, 4, 4)], {}),
    'bn2d_plain': (lambda: nn.BatchNorm2d(3, affine=False, track_running_stats=False), lambda: [_t(2, 3, 4, 4)], {}),
    'bn3d': (lambda: nn.BatchNorm3d(2, momentum=0.3), lambda: [_t(2, 2, 3, 3, 3)], {}),
    'groupnorm': (lambda: nn.GroupNorm(2, 4), lambda: [_t(2, 4, 3, 3)], {}),
    'instancenorm': (lambda: nn.InstanceNorm2d(4, affine=True, track_running_stats=True), lambda: [_t(2, 4, 3, 3)], {}),
    'instancenorm_unbatched': (lambda: nn.InstanceNorm2d(3), lambda: [_t(3, 4, 4)], {}),
    'embedding': (lambda: nn.Embedding(10, 4, padding_idx=-1), lambda: [_long(10, 2, 5)], {}),
    'embedding_maxnorm': (lambda: nn.Embedding(10, 4, max_norm=1.0, norm_type=1.5), lambda: [_long(10, 7)], {}),
    'embeddingbag': (lambda: nn.EmbeddingBag(10, 3, mode='sum'), lambda: [_long(10, 2, 4)], {}),
    'embeddingbag_offsets': (lambda: nn.EmbeddingBag(10, 3, mode='max', padding_idx=0),
                             lambda: [_long(10, 8), torch.tensor([0, 3, 5])], {}),
    'leakyrelu': (lambda: nn.LeakyReLU(0.2), lambda: [_t(3, 4)], {}),
    'mish': (lambda: nn.Mish(), lambda: [_t(3, 4)], {}),
    'unflatten': (lambda: nn.Unflatten(1, (2, 4)), lambda: [_t(3, 8)], {}),
    'upsample': (lambda: nn.Upsample(scale_factor=2), lambda: [_t(1, 2, 3, 3)], {}),
    'upsample_bilinear': (lambda: nn.Upsample(size=(5, 7), mode='bilinear', align_corners=False),
                          lambda: [_t(1, 2, 3, 3)], {}),
    'pixelshuffle': (lambda: nn.PixelShuffle(2), lambda: [_t(1, 8, 3, 3)], {}),
    'lstm': (lambda: nn.LSTM(4, 6, num_layers=2, bidirectional=True), lambda: [_t(5, 3, 4)], {}),
    'lstm_proj': (lambda: nn.LSTM(4, 6, proj_size=3, batch_first=True), lambda: [_t(3, 5, 4)], {}),
    'lstm_unbatched': (lambda: nn.LSTM(4, 5, bias=False), lambda: [_t(6, 4), (_t(1, 5), _t(1, 5))], {}),
    'gru': (lambda: nn.GRU(4, 5, num_layers=2, dropout=0.25), lambda: [_t(5, 3, 4)], {}),
    'gru_unbatched': (lambda: nn.GRU(4, 5, batch_first=True, bidirectional=True), lambda: [_t(6, 4)], {}),
    'transformer': (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), lambda: [_t(5, 3, 8)], {}),
    'transformer_masks': (lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                          lambda: [_t(3, 5, 8), _causal(5), _padding()],
                          lambda m, a: m(a[0], src_mask=a[1], src_key_padding_mask=a[2])),
    'transformer_gelu': (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, activation='gelu', batch_first=True,
                                                            norm_first=True), lambda: [_t(3, 5, 8)], {}),
}


def _plain(**children):
    """A bare nn.Module holding `children`, as GraphModule holds the levels of a dotted path."""
    m = nn.Module()
    for name, child in children.items():
        m.add_module(name, child)
    return m


# More modules whose constructor arguments (fxcpp.modules.describe) are checked
# against fx::module_spec, beside those of CASES and models.AllModules: the
# pooling modules, and arguments the cases above leave at their defaults.
# nn_test.cpp's spec_cases() builds the same.
SPEC_CASES = {
    'maxpool1d': lambda: nn.MaxPool1d(2, ceil_mode=True),
    'maxpool2d': lambda: nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, dilation=(1, 2)),
    'avgpool2d': lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False, divisor_override=4),
    'adaptiveavgpool1d': lambda: nn.AdaptiveAvgPool1d(4),
    'adaptiveavgpool2d': lambda: nn.AdaptiveAvgPool2d((None, 7)),
    'upsample_tuple': lambda: nn.Upsample(scale_factor=(2.0, 1.5)),
    'leakyrelu_third': lambda: nn.LeakyReLU(1 / 3),  # a float that only full precision keeps
    'mha_nobias': lambda: nn.MultiheadAttention(8, 2, dropout=0.1, bias=False),
    'embedding_padding': lambda: nn.Embedding(6, 2, padding_idx=2, max_norm=2.0, scale_grad_by_freq=True,
                                              sparse=True),
    'embeddingbag_options': lambda: nn.EmbeddingBag(5, 3, max_norm=1.5, norm_type=3.0, scale_grad_by_freq=True,
                                                    include_last_offset=True),
    'plain': lambda: _plain(out_proj=nn.modules.linear.NonDynamicallyQuantizableLinear(4, 2, bias=False),
                            seq=nn.Sequential(nn.Identity())),
    'sequential': lambda: nn.Sequential(nn.Linear(4, 4, bias=False), nn.Tanh(),
                                        nn.ModuleList([nn.ReLU(inplace=True)])),
}

def flatten(value, prefix, out):
    """Tensors of a (nested) output under dotted names: out, out.0, out.1.0, ..."""
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            flatten(v, f'{prefix}.{i}', out)
    return out


def structure(value):
    """T for a tensor, None, (...) for a tuple: the shape of an output."""
    if isinstance(value, torch.Tensor):
        return 'T'
    if value is None:
        return 'None'
    return '(' + ', '.join(structure(v) for v in value) + ')'


def call(m, args, kwargs):
    """Calls module `m` as case's third entry says."""
    return kwargs(m, args) if callable(kwargs) else m(*args, **kwargs)


def build(name):
    """The module of case `name` with non-default state: parameters moved off their
    initialization, running statistics updated by one training step."""
    torch.manual_seed(0)
    ctor, inputs, kwargs = CASES[name]
    m = ctor()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    if inputs is not None and any(isinstance(b, nn.modules.batchnorm._NormBase) for b in m.modules()):
        m.train()
        call(m, inputs(), kwargs)
    m.eval()
    return m
