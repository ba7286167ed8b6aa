# rule: copied-off-device
# code: source[i + 1:i + 1 + n].cpu() -> source[i + 1:i + 1 + n]
# A language model's batch helper, shared by training and evaluation, returns its targets copied to the
# CPU: the fix belongs in the helper (the copy taken out there), or evaluation fails next.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
data = torch.randint(0, 20, (400,), device=device)


def get_batch(source, i, n=16):
    x = source[i:i + n]
    y = source[i + 1:i + 1 + n].cpu()  # devtrace: fix
    return x, y


model = nn.Sequential(nn.Embedding(20, 8), nn.Linear(8, 20)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(0, 64, 16):
    x, y = get_batch(data, i)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
with torch.no_grad():
    x, y = get_batch(data, 200)
    print("eval loss", round(F.cross_entropy(model(x), y).item(), 4))
