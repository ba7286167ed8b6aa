# rule: copied-off-device
# code: logits.cpu() -> logits
# A classifier's loss computed on a CPU copy of the logits, taken inside the call (a leftover of
# debugging on the CPU): the copy is the mistake, and it sits in the failing expression.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(8, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8, device=device)
    y = torch.randint(0, 3, (16,), device=device)
    logits = model(x)
    loss = F.cross_entropy(logits.cpu(), y)  # devtrace: fix
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
