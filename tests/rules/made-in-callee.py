# rule: made-in-callee
# code: weight = weight.to(device)
# Class weights for an imbalanced dataset from a helper that computes them from the label counts on the
# CPU; the caller hands them to the loss next to logits on the GPU.
import torch
import torch.nn as nn
import torch.nn.functional as F


def inverse_frequency(labels, n_classes):
    counts = torch.bincount(labels, minlength=n_classes).float()
    return counts.sum() / (n_classes * counts)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
train_labels = torch.randint(0, 4, (400,))
weight = inverse_frequency(train_labels, 4)  # devtrace: fix
model = nn.Linear(10, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(20, 10, device=device)
    y = train_labels[step * 20:(step + 1) * 20].to(device)
    loss = F.cross_entropy(model(x), y, weight=weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
