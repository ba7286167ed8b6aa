# rule: module-never-moved
# code: norm = norm.to(device)
# A module whose only tensor is a registered buffer (no parameter), never moved: the buffer is where the module
# made it, on the CPU. A registered buffer moves with its module, so the module is what to move, not the
# buffer's factory given a device inside the module's code.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Scale(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("scale", torch.full((n,), 0.5))

    def forward(self, x):
        return x * self.scale


norm = Scale(8)  # devtrace: fix
x = torch.randn(4, 8).to(device)
print(norm(x).sum().item())
