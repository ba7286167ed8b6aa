# rule: moved-with-others
# code: labels = labels.to(device)
# A loader function that moves what it returns inside its return statement, all but the labels: a line after
# the return would never run, so the move goes right before it.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def load_data(device):
    features = torch.randn(64, 12)
    labels = torch.randint(0, 3, (64,))
    return features.to(device), labels  # devtrace: fix


features, labels = load_data(device)
model = nn.Linear(12, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = F.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
