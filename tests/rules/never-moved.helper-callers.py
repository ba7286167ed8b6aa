# rule: never-moved
# code: feats = feats.to(device)
# A helper makes the training and the validation features on the CPU; the caller moves neither. The
# move belongs in the helper: moved where training binds it, validation would fail next.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def make_features(n):
    feats = torch.randn(n, 4)  # devtrace: fix
    return feats


train_x = make_features(64)
val_x = make_features(16)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(train_x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("val", round(F.mse_loss(model(val_x), torch.zeros(16, 2, device=device)).item(), 4))
