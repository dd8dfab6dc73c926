"""Real models through torch.export and fx::load_exported: each model is
exported in Python (torch.export.export, then torch.export.save), run in C++
by `fxc run` (no Python), and its outputs compared with Python's; `fxc show
--code` must print the code torch.export.load's graph module has.

    pt2_corpus.py --fxc FXC --work DIR [--models fast|all|NAME,...]

Prints one line per model and a summary (how many load and run); exits 1 if
any model that exported fails in fxcpp. transformers models are built from
their configs with random weights (nothing is downloaded); they are skipped
where transformers is not installed; timm models likewise.
"""
import argparse
import os
import subprocess
import sys
import time

try:
    import torch
    import torch.utils._pytree as pytree
    import torchvision
except ImportError as e:  # ctest: skipped, not failed
    print(f'pt2_corpus.py: {e}; skipping')
    sys.exit(77)

TORCHVISION = ['resnet18', 'mobilenet_v3_small', 'efficientnet_b0', 'densenet121', 'convnext_tiny',
               'regnet_y_400mf', 'shufflenet_v2_x1_0', 'squeezenet1_1', 'mnasnet0_5', 'googlenet',
               'inception_v3', 'vgg11', 'alexnet', 'resnext50_32x4d', 'wide_resnet50_2', 'vit_b_16',
               'swin_t', 'maxvit_t', 'efficientnet_v2_s', 'mobilenet_v2']


def torchvision_model(name):
    def make():
        kwargs = {'aux_logits': False, 'init_weights': False} if name in ('googlenet', 'inception_v3') else {}
        model = torchvision.models.get_model(name, weights=None, **kwargs).eval()
        size = 299 if name == 'inception_v3' else 224
        return model, (torch.randn(1, 3, size, size),)
    return make


class Tuples(torch.nn.Module):
    """A transformers model returning its ModelOutput as a tuple (out.to_tuple())."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        return self.model(*args).to_tuple()


def transformers_model(name):
    def make():
        import transformers as t
        ids = torch.randint(0, 1000, (2, 16))
        if name == 'bert':
            cfg = t.BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=256)
            return t.BertModel(cfg), (ids,)
        if name == 'gpt2':
            cfg = t.GPT2Config(vocab_size=1000, n_embd=128, n_layer=2, n_head=4, use_cache=False, bos_token_id=0,
                               eos_token_id=0)
            return t.GPT2LMHeadModel(cfg), (ids,)
        if name == 't5':
            cfg = t.T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                             use_cache=False)
            return t.T5Model(cfg), (ids, torch.ones_like(ids), ids[:, :8])
        if name == 'vit':
            cfg = t.ViTConfig(image_size=64, patch_size=16, hidden_size=128, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=256)
            return t.ViTModel(cfg), (torch.randn(2, 3, 64, 64),)
        raise KeyError(name)
    return make


TIMM = ['resnet18', 'efficientnet_b0', 'vit_tiny_patch16_224', 'convnext_atto', 'mobilevit_xxs', 'deit_tiny_patch16_224',
        'regnetx_002', 'ghostnet_100', 'levit_128s', 'coat_tiny']


def timm_model(name):
    def make():
        import timm
        model = timm.create_model(name, pretrained=False).eval()  # random weights, nothing downloaded
        size = model.default_cfg.get('input_size', (3, 224, 224))
        return model, (torch.randn(1, *size),)
    return make


MODELS = {name: torchvision_model(name) for name in TORCHVISION}
MODELS.update({f'timm.{n}': timm_model(n) for n in TIMM})
MODELS.update({f'transformers.{n}': transformers_model(n) for n in ('bert', 'gpt2', 't5', 'vit')})
FAST = ['resnet18', 'mobilenet_v3_small', 'transformers.bert', 'transformers.gpt2']


def tensors(tree):
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def check(name, fxc, work):
    try:
        model, args = MODELS[name]()
    except ImportError as e:
        return 'skipped', str(e)
    model = model.eval()
    if hasattr(model, 'config'):
        model = Tuples(model)
    try:
        with torch.no_grad():
            ep = torch.export.export(model, args)
    except Exception as e:  # torch.export's own limits: reported, not counted against fxcpp
        return 'export failed', f'{type(e).__name__}: {str(e).splitlines()[0][:100]}'
    path = os.path.join(work, name + '.pt2')
    torch.export.save(ep, path)
    inputs = pytree.tree_leaves(args)
    torch.save(inputs, os.path.join(work, name + '.in.pt'))
    with torch.no_grad():
        expected = tensors(ep.module()(*args))
    out = os.path.join(work, name + '.out.pt')
    t0 = time.time()
    r = subprocess.run([fxc, 'run', path, '--inputs', os.path.join(work, name + '.in.pt'), '--output', out],
                       capture_output=True, text=True)
    seconds = time.time() - t0
    if r.returncode != 0:
        return 'FAILED', (r.stderr.strip().splitlines() or ['?'])[-1][:300]
    got = tensors(torch.load(out))
    if len(got) != len(expected):
        return 'FAILED', f'{len(got)} output tensors, Python gave {len(expected)}'
    for i, (g, e) in enumerate(zip(got, expected)):
        if g.shape != e.shape or not torch.allclose(g, e, rtol=1e-4, atol=1e-4):
            return 'FAILED', f'output {i} differs: max |diff| {(g - e).abs().max().item() if g.shape == e.shape else "shape"}'
    # The program as torch.export.load gives it back prints the same code.
    code = torch.export.load(path).graph_module.code
    r = subprocess.run([fxc, 'show', path, '--code'], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout != code:
        return 'FAILED', 'fxc show --code differs from torch.export.load(path).graph_module.code'
    return 'ok', f'{len(ep.graph.nodes)} nodes, same code, {len(got)} outputs allclose, fxc run {seconds:.1f} s'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fxc', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--models', default='fast')
    a = ap.parse_args()
    names = FAST if a.models == 'fast' else list(MODELS) if a.models == 'all' else a.models.split(',')
    os.makedirs(a.work, exist_ok=True)
    counts = {}
    for name in names:
        status, detail = check(name, a.fxc, a.work)
        counts[status] = counts.get(status, 0) + 1
        print(f'{name:28} {status:14} {detail}', flush=True)
    print(f'{counts.get("ok", 0)} of {len(names)} load and run in fxcpp with outputs allclose; ' +
          ', '.join(f'{v} {k}' for k, v in counts.items() if k != 'ok'))
    return 1 if counts.get('FAILED') else 0


if __name__ == '__main__':
    sys.exit(main())
