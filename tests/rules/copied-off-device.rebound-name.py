# rule: copied-off-device
# code: x = x.to(next(self.parameters()).device)
# The same block copies its output with .to("cpu") and binds it to `x`, the name its caller's tensor (the
# concatenation's other operand came from it) has in the caller: after that statement `x` is the copy, so
# the move back follows the block's parameters, not x.device (a move of the copy to its own device).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Up(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        x = self.conv(x).to("cpu")  # devtrace: fix
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = Up(4)
        self.skip = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        h = self.up(x)
        return torch.cat([h, self.skip(F.interpolate(x, scale_factor=2))], dim=1)


def main(device):
    net = Net().to(device)
    x = torch.randn(2, 4, 4, 4, device=device)
    print(net(x).shape)


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
