# rule: never-moved
# code: pos_weight = pos_weight.to(device)
# Multi-label tagging with rare tags up-weighted: the pos_weight tensor is made on the CPU and handed to
# the functional loss as it is.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
n_tags = 6
pos_weight = torch.full((n_tags,), 3.0)  # devtrace: fix
model = nn.Linear(20, n_tags).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(32, 20).to(device)
    tags = (torch.rand(32, n_tags) < 0.1).float().to(device)
    loss = F.binary_cross_entropy_with_logits(model(x), tags, pos_weight=pos_weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
