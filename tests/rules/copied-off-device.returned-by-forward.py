# rule: copied-off-device
# code: self.conv(x).cpu() -> self.conv(x)
# A U-Net's upsampling block returns its output copied to the CPU; the concatenation in its caller fails. The
# block is model code that runs on any device: the copy is taken out where the block makes it, not moved back
# to a device named in the caller (whose `x` is not the block's `x`).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Up(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        x = self.conv(x).cpu()  # devtrace: fix
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
