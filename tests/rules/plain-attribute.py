# rule: plain-attribute
# code: self.register_buffer("inv_freq", None)
# Rotary position embeddings whose inverse frequencies are kept as a plain attribute: Module.to moves
# the projection's parameters, not the attribute, so the rotation angles are computed on the CPU.
import torch
import torch.nn as nn


class RotaryAttentionInput(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))  # devtrace: fix

    def forward(self, x):
        t = torch.arange(x.size(1), device=x.device).float()
        angles = torch.outer(t, self.inv_freq)
        cos, sin = angles.cos(), angles.sin()
        h = self.proj(x)
        h1, h2 = h[..., 0::2], h[..., 1::2]
        return torch.cat([h1 * cos - h2 * sin, h1 * sin + h2 * cos], dim=-1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
layer = RotaryAttentionInput(8).to(device)
x = torch.randn(2, 5, 8, device=device)
print("norm", round(layer(x).norm().item(), 4))
