"""A model that uses every leaf module of fx::nn, traced by torch.fx in
oracle.py and by fxcpp in nn_test.cpp (AllModules there)."""
import torch.nn as nn


class AllModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(4, 4, 3, padding=1)
        self.convt1d = nn.ConvTranspose1d(4, 4, 1)
        self.bn1d = nn.BatchNorm1d(4)
        self.conv2d = nn.Conv2d(4, 8, 3, padding=1)
        self.bn2d = nn.BatchNorm2d(8)
        self.acts = nn.ModuleList([nn.ReLU(), nn.ReLU6(), nn.GELU(), nn.LeakyReLU(0.1), nn.SiLU(), nn.Mish(),
                                   nn.Hardswish(), nn.Hardsigmoid(), nn.Sigmoid(), nn.Tanh()])
        self.norms = nn.ModuleDict({'group': nn.GroupNorm(2, 8), 'instance': nn.InstanceNorm2d(8),
                                    'drop': nn.Dropout2d(0.1)})
        self.up = nn.Sequential(nn.Upsample(scale_factor=2.0), nn.PixelShuffle(2), nn.ConvTranspose2d(2, 2, 2, stride=2))
        self.conv3d = nn.Conv3d(1, 1, 1)
        self.bn3d = nn.BatchNorm3d(1)
        self.flatten = nn.Flatten(2)
        self.unflatten = nn.Unflatten(1, (2, 4))
        self.identity = nn.Identity()
        self.linear = nn.Linear(8, 8)
        self.bilinear = nn.Bilinear(8, 8, 8)
        self.layernorm = nn.LayerNorm(8)
        self.mha = nn.MultiheadAttention(8, 2)
        self.encoder = nn.TransformerEncoderLayer(8, 2, 16)
        self.lstm = nn.LSTM(8, 8)
        self.gru = nn.GRU(8, 8)
        self.embedding = nn.Embedding(10, 8)
        self.bag = nn.EmbeddingBag(10, 8)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.Softmax(dim=-1)
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x, tokens):
        s = self.bn1d(self.convt1d(self.conv1d(x)))
        y = self.bn2d(self.conv2d(s.unsqueeze(-1)))
        for act in self.acts:
            y = act(y)
        y = self.norms['drop'](self.norms['instance'](self.norms['group'](y)))
        y = self.up(y)
        y = self.bn3d(self.conv3d(y.unsqueeze(1))).squeeze(1)
        z = self.unflatten(self.flatten(y)).flatten(1, 2).transpose(1, 2)
        z = self.identity(self.linear(z))
        z = self.layernorm(self.bilinear(z, z))
        z = self.mha(z, z, z, need_weights=False)[0]
        z = self.encoder(z)
        z = self.lstm(z)[0]
        z = self.gru(z)[0]
        z = z + self.embedding(tokens) + self.bag(tokens).unsqueeze(1)
        return self.log_softmax(self.dropout(z)) + self.softmax(z)
