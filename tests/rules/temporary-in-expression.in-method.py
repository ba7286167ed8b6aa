# rule: temporary-in-expression
# code: self._make_mask(...).to(scores.device)
# A decoder block's mask method takes only a size and builds the mask inside its return; the forward that
# calls it holds the scores the mask meets, on whatever device the caller put them.
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def _make_mask(self, sz):
        return torch.triu(torch.ones(sz, sz, dtype=torch.bool), diagonal=1)

    def forward(self, src):
        h = self.proj(src)
        scores = h @ h.transpose(-2, -1)
        mask = self._make_mask(src.size(1))  # devtrace: fix
        return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ h


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    block = Block(6).to(device)
    src = torch.randn(3, 4, 6).to(device)
    print("out", round(block(src).sum().item(), 4))


main()
