# The inputs are moved to the GPU each step; the labels are not.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
data = TensorDataset(torch.randn(96, 8), torch.randint(0, 3, (96,)))
loader = DataLoader(data, batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for inputs, labels in loader:  # devtrace: origin
        inputs = inputs.to(device)  # devtrace: fix
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch", epoch, "loss", round(loss.item(), 3))
