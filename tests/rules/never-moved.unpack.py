# rule: never-moved
# code: x = x.to(device)
# code: y = y.to(device)
# A loop that takes each batch apart with plain Python: the move goes after the unpacking, for both.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(32, 6), torch.randint(0, 2, (32,))), batch_size=8)
model = nn.Linear(6, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, batch in enumerate(loader):
    x, y = batch  # devtrace: fix
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
