"""Realistic models as a torch.nn user writes them, each translated line for
line into fx::Module code in translations_test.cpp. oracle.py traces each
one with torch.fx 2.14 (graph and code) and saves its state dict, an input
and the outputs, so that the C++ translation is checked for the same text
and for allclose outputs with the same weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class UNet(nn.Module):  # two levels: pooling down, bilinear interpolation up, cat with the skip
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.dec1 = nn.Sequential(nn.Conv2d(24, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        up = F.interpolate(e2, scale_factor=2, mode='bilinear', align_corners=False)
        d1 = self.dec1(torch.cat([up, e1], dim=1))
        return self.head(d1)


class GPTBlock(nn.Module):  # a hand-written GPT block: causal attention masked by a tril buffer
    def __init__(self, n_embd=16, n_head=2, block_size=8):
        super().__init__()
        self.n_head = n_head
        self.scale = (n_embd // n_head) ** -0.5
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)
        self.register_buffer('bias', torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


class CLIPHead(nn.Module):  # CLIP's contrastive head: projections, L2 normalization, a learned logit scale
    def __init__(self):
        super().__init__()
        self.visual_projection = nn.Linear(8, 6, bias=False)
        self.text_projection = nn.Linear(10, 6, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(2.6592))

    def forward(self, image_embeds, text_embeds):
        image_embeds = self.visual_projection(image_embeds)
        text_embeds = self.text_projection(text_embeds)
        image_embeds = image_embeds / image_embeds.norm(p=2, dim=-1, keepdim=True)
        text_embeds = text_embeds / text_embeds.norm(p=2, dim=-1, keepdim=True)
        logit_scale = self.logit_scale.exp()
        logits_per_text = torch.matmul(text_embeds, image_embeds.t()) * logit_scale
        return logits_per_text, logits_per_text.t()


class RNNTextEncoder(nn.Module):  # embedding, a bidirectional GRU, both final states into a classifier
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 8, padding_idx=0)
        self.rnn = nn.GRU(8, 12, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(24, 5)

    def forward(self, tokens):
        emb = self.embedding(tokens)
        out, h = self.rnn(emb)
        pooled = torch.cat([h[-2], h[-1]], dim=1)
        return self.fc(pooled), out.mean(dim=1)


class MoERouter(nn.Module):  # a gate weighting experts kept in a ModuleDict
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleDict({'a': nn.Linear(8, 8), 'b': nn.Sequential(nn.Linear(8, 8), nn.GELU()),
                                      'c': nn.Identity()})

    def forward(self, x):
        weights = F.softmax(self.gate(x), dim=-1)
        top, idx = torch.topk(weights, 2, dim=-1)
        out = 0
        for i, name in enumerate(self.experts):
            out = out + weights[..., i:i + 1] * self.experts[name](x)
        return out, top, idx


class SqueezeExcite(nn.Module):  # squeeze-and-excitation channel attention
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Conv2d(8, 2, 1)
        self.fc2 = nn.Conv2d(2, 8, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.relu(self.fc1(s), inplace=True)
        return x * torch.sigmoid(self.fc2(s))


class PatchEmbed(nn.Module):  # ViT's input: patches, a class token expanded to the batch, position embeddings
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 16, 4, stride=4)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, 16))
        self.pos_embed = nn.Parameter(torch.randn(1, 5, 16) * .02)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        B = x.shape[0]
        cls = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        return self.norm(x)


class VAEHead(nn.Module):  # a VAE encoder's head: mean, log-variance and the reparameterized sample
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 8)

    def forward(self, x, eps):
        mu, logvar = self.fc(x).chunk(2, dim=-1)
        std = torch.exp(0.5 * logvar)
        return mu + eps * std, mu, logvar


class CausalConv(nn.Module):  # a temporal convolution padded on the left only
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, dilation=2)
        self.pad = (3 - 1) * 2

    def forward(self, x):
        y = self.conv(F.pad(x, (self.pad, 0)))
        return F.gelu(y) + y


class ConvNeXtBlock(nn.Module):  # depthwise conv, channels-last LayerNorm and MLP, layer scale
    def __init__(self, dim=8):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv2(self.act(self.pwconv1(x)))
        x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return shortcut + x


class BufferProxyTracer(torch.fx.Tracer):
    """torch.fx's default tracer fails on GPTBlock: `self.bias[:, :, :T, :T]`
    indexes a real tensor (buffers are not proxies) with a Proxy, a
    TypeError. With buffers as proxies it records get_attr bias and the
    getitem, which is what fxcpp's default tracer records (a buffer combined
    with a proxy is a get_attr node): a deliberate difference."""
    proxy_buffer_attributes = True


def _t(*shape):
    return torch.randn(*shape)


# name -> (model class, its inputs, the tracer torch.fx needs or None)
class LSTMCellByHand(nn.Module):  # an LSTM cell written out, its gates through F.sigmoid and F.tanh
    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(6, 32)
        self.hh = nn.Linear(8, 32)

    def forward(self, x, h, c):
        gates = self.ih(x) + self.hh(h)
        i, f, g, o = gates.chunk(4, dim=1)
        c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
        h = F.sigmoid(o) * F.tanh(c)
        return h, c


TRANSLATIONS = {
    'unet': (UNet, lambda: [_t(2, 3, 8, 8)], None),
    'gpt_block': (GPTBlock, lambda: [_t(2, 6, 16)], BufferProxyTracer),
    'clip_head': (CLIPHead, lambda: [_t(3, 8), _t(4, 10)], None),
    'rnn_text_encoder': (RNNTextEncoder, lambda: [torch.randint(0, 20, (3, 7))], None),
    'moe_router': (MoERouter, lambda: [_t(4, 8)], None),
    'squeeze_excite': (SqueezeExcite, lambda: [_t(2, 8, 5, 5)], None),
    'patch_embed': (PatchEmbed, lambda: [_t(2, 3, 8, 8)], None),
    'vae_head': (VAEHead, lambda: [_t(3, 10), _t(3, 4)], None),
    'causal_conv': (CausalConv, lambda: [_t(2, 4, 9)], None),
    'convnext_block': (ConvNeXtBlock, lambda: [_t(2, 8, 7, 7)], None),
    'lstm_cell_by_hand': (LSTMCellByHand, lambda: [_t(3, 6), _t(3, 8), _t(3, 8)], None),
}
