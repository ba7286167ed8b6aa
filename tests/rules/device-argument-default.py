# rule: device-argument-default
# code: load_data(..., device=device)
# A loader function moves what it returns with its own device parameter, which defaults to the CPU; the
# script calls it without one, so the moves do nothing and the model, on the GPU, gets CPU tensors.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def load_data(n, device="cpu"):
    features = torch.randn(n, 12)
    labels = torch.randint(0, 3, (n,))
    return features.to(device), labels.to(device)


features, labels = load_data(64)  # devtrace: fix
model = nn.Linear(12, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = F.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
