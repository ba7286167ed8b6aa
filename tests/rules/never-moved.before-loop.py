# rule: never-moved
# code: factors = factors.to(device)
# A constant of an evaluation metric made once before the loop, in the function whose loop moves each
# batch: it was not made with the batches, so its move goes where it is made, not beside theirs in the loop.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def evaluate(model, loader):
    factors = torch.tensor([[4.0, 2.0, 1.0]])  # devtrace: fix
    total = 0.0
    for x, in loader:
        x = x.to(device)
        total += (model(x) * factors).sum().item()
    return total


model = nn.Linear(12, 3).to(device)
loader = DataLoader(TensorDataset(torch.randn(32, 12)), batch_size=16)
print("score", round(evaluate(model, loader), 4))
