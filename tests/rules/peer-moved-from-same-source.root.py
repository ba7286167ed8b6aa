# rule: peer-moved-from-same-source
# code: x_te = x_te.to(device)
# The test batch's labels are moved, its inputs not; the model gets the inputs through a helper that
# normalizes a copy of them, so the operand that fails is computed from the batch, not the batch itself:
# the move still belongs beside the labels' move.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(12, 3).to(device)


def normalize(x):
    x_ = x.clone()
    return x_ / (x_.norm(2, 1, keepdim=True) + 1e-4)


loader = DataLoader(TensorDataset(torch.randn(32, 12), torch.randint(0, 3, (32,))), batch_size=16)
x_te, y_te = next(iter(loader))
x_te, y_te = x_te, y_te.to(device)  # devtrace: fix
pred = model(normalize(x_te)).argmax(1)
print("accuracy", pred.eq(y_te).float().mean().item())
