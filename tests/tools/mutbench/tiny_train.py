"""A tiny training program of our own for the mutation benchmark's test (tests/tools/mutbench_check.py): one site of
every mutant kind scripts/mutbench.py makes, and it runs in a few seconds on the cpu and on a simulated GPU."""

import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PosEncoding(nn.Module):
    """A constant kept as a buffer, so that the module's move takes it along."""

    def __init__(self, n, d):
        super().__init__()
        pe = torch.linspace(0.0, 1.0, n * d).view(n, d)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = PosEncoding(8, 4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.pos(x)
        scale = torch.ones(h.size(1), device=h.device)
        h = h * scale
        out = self.fc(h)
        return out


def make_batch(n):
    x = torch.randn(n, 4)
    y = torch.randint(0, 3, (n,))
    return x.to(device), y.to(device)


model = Net()
model.to(device)
weight = torch.tensor([1.0, 2.0, 1.0], device=device)
loss_fn = nn.CrossEntropyLoss(weight=weight)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = make_batch(8)
    x = x.to(device)
    logits = model(x)
    loss = loss_fn(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()

path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"fc.weight": model.fc.weight.detach()}, path)
state = torch.load(path, map_location=device)
model.fc.weight = nn.Parameter(state["fc.weight"])
x, y = make_batch(4)
total = torch.zeros(1, device=device)
total = total + model(x).sum()
print("ok %.3f" % total.item())
