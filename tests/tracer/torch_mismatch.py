# PyTorch's own device-mismatch error, raised by libtorch as a c10::Error:
# a tensor on the meta device added to one on the cpu (no GPU needed).
import torch


def forward(x):
    w = torch.ones(3)
    return x + w  # the failing statement


x = torch.ones(3, device="meta")
y = forward(x)
