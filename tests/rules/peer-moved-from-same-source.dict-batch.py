# rule: peer-moved-from-same-source
# code: labels = labels.to(device)
# absent: ids = ids.to(device)
# A loader of dict batches: the evaluation takes each field out by key, moves the inputs and forgets the labels.
# The fix moves the labels, by their own name, after the statement that binds them (not the inputs' name again).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 30, (n, 6), generator=g)
        self.labels = torch.randint(0, 3, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"ids": self.ids[i], "labels": self.labels[i]}


def evaluate(model, loader, device):
    total = 0.0
    with torch.no_grad():
        for batch in loader:
            ids = batch["ids"].to(device)
            labels = batch["labels"]  # devtrace: fix
            total += F.cross_entropy(model(ids), labels).item()
    return total


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Embedding(30, 8), nn.Flatten(), nn.Linear(48, 3)).to(device)
print("loss", round(evaluate(model, DataLoader(Pairs(16), batch_size=4), device), 4))
