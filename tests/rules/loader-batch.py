# rule: loader-batch
# code: x = x.to(device)
# Batches from a generator of the program's own (a shard reader): the loop moves the targets and
# forgets the features.
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_batches(n_batches, batch_size):
    for _ in range(n_batches):
        features = torch.randn(batch_size, 16)
        targets = torch.randint(0, 4, (batch_size,))
        yield features, targets


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in read_batches(3, 32):  # devtrace: fix
    y = y.to(device)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
