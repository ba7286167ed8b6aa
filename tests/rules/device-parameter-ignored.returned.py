# rule: device-parameter-ignored
# code: torch.arange(..., device=device)
# Relative positions (Funnel Transformer's shape): a helper handed the device by its caller returns a range
# made without it; the caller indexes and expands it and gathers with it, and nothing names the range on the
# way. The helper is fixed with the device it was handed, for each of its callers.
import torch
import torch.nn as nn


class RelativeEmbedding(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(2 * n, dim))

    def relative_pos(self, n, stride, device=None):
        return torch.arange(n - 1, -n, -stride, dtype=torch.long)  # devtrace: fix

    def forward(self, x):
        n = x.shape[1]
        rel_pos = self.relative_pos(n, 1, device=x.device)
        rel_pos = rel_pos[:, None] + n
        rel_pos = rel_pos.expand(rel_pos.size(0), self.table.shape[1])
        return x + torch.gather(self.table, 0, rel_pos)[:n]


def main(device):
    layer = RelativeEmbedding(4, 8).to(device)
    print(layer(torch.randn(2, 4, 8, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
