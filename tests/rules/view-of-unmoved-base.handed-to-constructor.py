# rule: view-of-unmoved-base
# code: torch.zeros(..., device=device)
# A key cache (not a module) is handed the device by its constructor's caller and makes its buffer without
# it; the attention reads a slice of the cache, transposed. The fix is in the constructor, with the device
# it was handed (a literal device there would break every other caller and the cpu run).
import torch
import torch.nn as nn


class KeyCache:
    def __init__(self, batch, length, dim, device):
        self.keys = torch.zeros(batch, length, dim)  # devtrace: fix
        self.pos = 0

    def append(self, k):
        self.keys[:, self.pos:self.pos + k.shape[1]] = k
        self.pos += k.shape[1]
        return self.keys[:, :self.pos]


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)

    def forward(self, x, cache):
        keys = cache.append(self.q(x))
        return (self.q(x) @ keys.transpose(1, 2)).softmax(-1) @ keys


def main(device):
    torch.manual_seed(0)
    cache = KeyCache(2, 8, 4, device)
    attn = Attention(4).to(device)
    for _ in range(2):
        print(attn(torch.randn(2, 1, 4, device=device), cache).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
