# rule: derived-from-unmoved
# code: torch.arange(..., device=device)
# A helper handed the device builds a relative-distance table row by row in a nested function, whose range
# is made without the device; the table is stacked and summed into the layer's output. The nested function
# sees the helper's parameter (a free variable): the fix uses it, not a device literal.
import torch
import torch.nn as nn


def build_bias(n, device):
    def row(i):
        return torch.arange(n) - i  # devtrace: fix

    return torch.stack([row(i) for i in range(n)])


class Scorer(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        bias = build_bias(x.shape[1], x.device)
        return self.lin(x) + bias.float().sum(0)


def main(device):
    torch.manual_seed(0)
    print(Scorer(4).to(device)(torch.randn(2, 4, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
