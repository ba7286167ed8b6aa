# rule: temporary-in-expression
# code: torch.arange(..., device=lengths.device)
# The padding mask of a batch of sequences, made and compared in one statement: a range of positions made
# without a device, indexed to a row and compared with the lengths. The statement binds the comparison's
# result, never the range, so no line after it can move the range: device= on the range, from the lengths
# the forward received (model code runs on whatever device its callers use).
import torch
import torch.nn as nn


class MaskedAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)

    def forward(self, x, lengths):
        n = x.shape[1]
        mask = torch.arange(n)[None, :] < lengths[:, None]  # devtrace: fix
        scores = self.q(x) @ x.transpose(1, 2)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        return scores.softmax(-1) @ x


def main(device):
    torch.manual_seed(0)
    layer = MaskedAttention(8).to(device)
    x = torch.randn(2, 5, 8, device=device)
    print(layer(x, torch.tensor([3, 5], device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
