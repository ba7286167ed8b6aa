# rule: made-in-callee
# code: self._make_mask(...).to(scores.device)
# The mask method names its mask and returns it; the method has no tensor or device of its own to follow
# (only a size), its caller has the scores the mask meets: the move goes on the method's call.
import torch
import torch.nn as nn


class MaskedAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def _make_mask(self, sz):
        mask = torch.ones(sz, sz, dtype=torch.bool).triu(1)
        return mask

    def forward(self, src):
        h = self.proj(src)
        scores = h @ h.transpose(-2, -1)
        mask = self._make_mask(src.size(1))  # devtrace: fix
        return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ h


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    attn = MaskedAttention(6).to(device)
    src = torch.randn(2, 5, 6, device=device)
    print("out", round(attn(src).sum().item(), 4))


main()
