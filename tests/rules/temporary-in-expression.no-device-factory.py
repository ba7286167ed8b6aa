# rule: temporary-in-expression
# code: torch.from_numpy(...).to(device)
# A lookup table kept as a numpy array, turned into a tensor inside the expression that indexes it with the
# device's indices: torch.from_numpy takes no device= (the tensor shares numpy's memory, on the CPU), so the
# tensor goes to the device by .to() on that call.
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
table = np.arange(10, dtype=np.float32)


def lookup(t):
    return torch.from_numpy(table)[t]  # devtrace: fix


t = torch.tensor([1, 2, 3]).to(device)
x = torch.randn(3).to(device)
print((x * lookup(t)).sum().item())
