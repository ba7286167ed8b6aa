# rule: copied-off-device
# code: probs = probs.to(device)
# Multi-label tagging: the probabilities are copied to the CPU to collect them for the epoch's metric,
# and the CPU copy is then handed to the loss next to the targets on the GPU.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 5), nn.Sigmoid()).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
collected = []
for step in range(3):
    x = torch.randn(16, 10, device=device)
    tags = torch.randint(0, 2, (16, 5), device=device).float()
    probs = model(x).cpu()
    collected.append(probs.detach())
    loss = F.binary_cross_entropy(probs, tags)  # devtrace: fix
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("mean prob", round(torch.cat(collected).mean().item(), 4))
