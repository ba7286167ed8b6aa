# rule: made-before-source-moved
# code: model.to(device)
# Fine-tuning with an L2-SP penalty: the pretrained weights are kept as anchors, copied before the model
# is moved, so the penalty compares GPU parameters with their CPU copies.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))
anchors = [p.detach().clone() for p in model.parameters()]  # devtrace: fix
model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(16, 12, device=device)
    y = torch.randint(0, 3, (16,), device=device)
    penalty = sum(((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchors))
    loss = F.cross_entropy(model(x), y) + 0.01 * penalty
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
