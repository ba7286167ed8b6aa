# rule: never-moved
# code: x = x.to(device)
# code: y = y.to(device)
# A batch helper that stacks rows of a dataset kept on the CPU, called by the training loop and by the
# evaluation after it. Training fails first, so the trace saw one caller; the source has two: the move goes in
# the helper, where it makes the batch, or the evaluation fails next.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.randn(64, 8)
labels = torch.randint(0, 3, (64,))


def get_batch(start):
    x = torch.stack([data[j] for j in range(start, start + 8)])
    y = torch.stack([labels[j] for j in range(start, start + 8)])  # devtrace: fix
    return x, y


model = nn.Linear(8, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    xb, yb = get_batch(step * 8)
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    xv, yv = get_batch(40)
    print(F.cross_entropy(model(xv), yv).item())
