# rule: never-moved
# code: scale = scale.to(x.device)
# A module's forward makes a tensor with a factory and no device=, and multiplies it with its input's
# projection. Module code runs wherever its caller's tensors are: the fix follows the input's device
# (x.device), never a device the caller happened to use.
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        scale = torch.ones(x.size(-1))  # devtrace: fix
        return self.proj(x) * scale


torch.manual_seed(0)
use_cuda = torch.cuda.is_available()
model = Scaled(4)
x = torch.randn(2, 4)
if use_cuda:
    model, x = model.cuda(), x.cuda()
print("out", tuple(model(x).shape))
