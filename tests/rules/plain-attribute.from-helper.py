# rule: plain-attribute
# code: self.register_buffer("table", None)
# A module's constructor keeps what a helper returned (a sinusoidal table) in a plain attribute: the
# module's move takes its parameters and buffers, not the table, which stays on the CPU.
import math

import torch
import torch.nn as nn


def sinusoids(length, channels):
    scale = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-scale * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class Encoder(nn.Module):
    def __init__(self, length, channels):
        super().__init__()
        self.proj = nn.Linear(channels, channels)
        self.table = sinusoids(length, channels)  # devtrace: fix

    def forward(self, x):
        return self.proj(x + self.table)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = Encoder(5, 8).to(device)
x = torch.randn(2, 5, 8, device=device)
print("out", tuple(model(x).shape))
