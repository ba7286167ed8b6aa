# rule: plain-attribute
# code: del self.bias
# code: self.register_buffer("bias", None)
# An optional bias kept as a plain attribute, set to None first and then to a tensor: moving the module
# leaves it on the CPU, and a buffer cannot be registered under the name while the plain attribute holds it.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class Affine(nn.Module):
    def __init__(self, n, use_bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = None
        if use_bias:
            self.bias = torch.zeros(n)  # devtrace: fix

    def forward(self, x):
        out = x * self.weight
        if self.bias is not None:
            out = out + self.bias
        return out


model = Affine(12).to(device)
x = torch.randn(16, 12).to(device)
print("out", round(model(x).sum().item(), 4))
