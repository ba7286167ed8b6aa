# The model went to the GPU; the batches from the DataLoader did not.
# On a GPU server: "Expected all tensors to be on the same device ... cuda:0 and cpu!" in the first linear layer.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
data = TensorDataset(torch.randn(128, 20), torch.randint(0, 4, (128,)))
loader = DataLoader(data, batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in loader:  # devtrace: origin  devtrace: fix
        y = y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
