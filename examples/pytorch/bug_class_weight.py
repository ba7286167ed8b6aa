# Class weights for an imbalanced dataset, computed on the CPU from the
# label counts and handed to CrossEntropyLoss.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
labels = torch.randint(0, 5, (200,))
counts = torch.bincount(labels, minlength=5).float()
class_weight = counts.sum() / (5 * counts)  # devtrace: origin  devtrace: fix
criterion = nn.CrossEntropyLoss(weight=class_weight)
model = nn.Linear(16, 5).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(10):
    x = torch.randn(20, 16, device=device)
    y = labels[step * 20:(step + 1) * 20].to(device)
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
