# rule: derived-from-unmoved
# code: counts = counts.to(device)
# Inverse-frequency class weights computed inline from the class counts, which were made on the CPU.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
counts = torch.tensor([900.0, 80.0, 20.0])  # devtrace: fix
model = nn.Linear(12, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 12).to(device)
    y = torch.randint(0, 3, (16,)).to(device)
    loss = F.cross_entropy(model(x), y, weight=counts.sum() / counts)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
