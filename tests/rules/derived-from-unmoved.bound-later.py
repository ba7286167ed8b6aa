# rule: derived-from-unmoved
# code: pos = pos.to(h.device)
# A decoder block makes its position ids without device=; the rotary table they meet is a buffer on the GPU.
# The block passes device=scores.device to a factory further down, but `scores` is bound only after the
# position ids: the fix follows a tensor bound before them (h), never a name that is not bound yet there.
import torch
import torch.nn as nn


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, h, pos):
        freqs = pos[:, None].float() * self.inv_freq
        return h * torch.cat((freqs, freqs), dim=-1).cos()


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.rot = Rotary(dim)

    def forward(self, x):
        h = self.proj(x)
        pos = torch.arange(h.shape[1])  # devtrace: fix
        scores = h @ h.transpose(1, 2)
        bias = torch.zeros(h.shape[1], device=scores.device)
        return self.rot(h, pos) + bias[:, None] + scores.mean()


def main(device):
    block = Block(8).to(device)
    print(block(torch.randn(2, 5, 8, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
