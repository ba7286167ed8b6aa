# A loss built with a pos_weight tensor made on the CPU: BCEWithLogitsLoss
# keeps it as a buffer, and nothing moves the loss module.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
pos_weight = torch.tensor([4.0])  # devtrace: origin  devtrace: fix
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for step in range(20):
    x = torch.randn(32, 12).to(device)
    y = (torch.rand(32, 1) < 0.2).float().to(device)
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
