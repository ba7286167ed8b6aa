# rule: sibling-moved
# code: inputs = inputs.to(device)
# absent: features = features.to(
# The dataset stays on the cpu and a helper slices batches from it; the loop moves each batch's labels and
# forgets its inputs. The inputs are views of the dataset, but the move belongs with the labels' move, each
# batch, not on the whole dataset in the data code.
import torch
import torch.nn as nn


def load_features(n, dim):
    features = torch.randn(n, dim)
    labels = (features.sum(1) > 0).long()
    return features, labels


def minibatches(features, labels, size):
    for start in range(0, features.shape[0], size):
        yield features[start:start + size], labels[start:start + size]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
features, labels = load_features(48, 6)
net = nn.Linear(6, 2).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for epoch in range(2):
    for inputs, targets in minibatches(features, labels, 12):
        targets = targets.to(device)  # devtrace: fix
        loss = criterion(net(inputs), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss", round(loss.item(), 4))
