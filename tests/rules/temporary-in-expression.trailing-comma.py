# rule: temporary-in-expression
# code: torch.full(..., device=device)
# A class weight made inline by a call whose arguments end with a comma (as black writes long calls):
# device= goes before the closing parenthesis with no second comma.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(12, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 12).to(device)
    y = torch.randint(0, 3, (16,)).to(device)
    loss = F.cross_entropy(model(x), y, weight=torch.full((3,), 1.0,))  # devtrace: fix
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
