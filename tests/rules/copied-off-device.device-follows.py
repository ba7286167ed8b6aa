# rule: copied-off-device
# code: self.proj(x).cpu() -> self.proj(x)
# The hidden states are copied off the device (for a look at them, say), and a mask helper follows their
# device: it is made on the cpu with device=h.device, correctly for what it was given. A move of the mask with
# that same expression would move it nowhere: the copy is the mistake, fixed where it is made.
import torch
import torch.nn as nn


def causal_mask(n, device):
    return torch.triu(torch.full((n, n), float("-inf"), device=device), 1)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x).cpu()  # devtrace: fix
        mask = causal_mask(x.size(1), h.device)
        att = (x @ x.transpose(-1, -2) + mask).softmax(-1)
        return self.out(att @ x)


def main(device):
    torch.manual_seed(0)
    block = Block(8).to(device)
    print(round(block(torch.randn(2, 5, 8, device=device)).sum().item(), 4))


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
