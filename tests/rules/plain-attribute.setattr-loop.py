# rule: plain-attribute
# code: self.register_buffer(k, v)
# A module's constructor sets its tensors by name, setattr(self, k, v) in a loop over the dict a helper
# returned: each is a plain attribute, which the module's move leaves on the CPU. Registered as a buffer by the
# same name and value right before the setattr (which then sets the buffer), every one of them moves with it.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def affine_tables(n):
    return {"scale": torch.ones(n), "shift": torch.zeros(n)}


class Affine(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        for k, v in affine_tables(n).items():
            setattr(self, k, v)  # devtrace: fix

    def forward(self, x):
        return self.fc(x) * self.scale + self.shift


model = Affine(8).to(device)
x = torch.randn(4, 8).to(device)
print(model(x).sum().item())
