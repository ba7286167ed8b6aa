# rule: copied-off-device
# code: torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1).cpu() -> torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1)
# A causal attention block copies its boolean mask off the device. nn.MultiheadAttention turns the mask into a
# float one inside torch (zeros_like on the mask's device) and fails there: the tensor that fails is made in
# the library, on the device of the mask it was given, so the chain goes on to the mask and to its copy.
import torch
import torch.nn as nn


class CausalBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1).cpu()  # devtrace: fix
        out, _ = self.attn(x, x, x, attn_mask=mask)
        return out


def main(device):
    block = CausalBlock(8).to(device)
    print(block(torch.randn(2, 5, 8, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
