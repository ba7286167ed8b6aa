# rule: sibling-moved
# code: x = x.to(device)
# A synthetic-data helper returns features and labels made together; the loop moves the labels it got
# back and forgets the features.
import torch
import torch.nn as nn
import torch.nn.functional as F


def synthetic_batch(n, dim=16, classes=4):
    return torch.randn(n, dim), torch.randint(0, classes, (n,))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = synthetic_batch(32)
    y = y.to(device)  # devtrace: fix
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
