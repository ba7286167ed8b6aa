# rule: temporary-in-expression
# code: causal_mask(...).to(scores.device)
# Causal self-attention whose mask comes from a helper given only the sequence length: the helper has no
# tensor or device of its own to follow, its caller has (the scores the mask is added to). The fix is on
# the helper's call, never a device literal inside the helper.
import math

import torch
import torch.nn as nn


def causal_mask(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


class CausalAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores + causal_mask(x.size(1))  # devtrace: fix
        return torch.softmax(scores, dim=-1) @ v


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    attn = CausalAttention(8).to(device)
    x = torch.randn(2, 5, 8, device=device)
    print("out", round(attn(x).sum().item(), 4))


main()
