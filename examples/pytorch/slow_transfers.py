# A loop that trains correctly but copies more than it should, for
# `devtrace transfers` to flag (tests/viewer/transfers_flags.py): a constant made on
# the CPU once and moved to the GPU again on every step, and a
# GPU -> CPU -> GPU round trip on every step. The move of each batch, the
# model's .to and the loss read each step are what correct code does.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
MEAN = torch.full((1, 8), 0.5)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    x = torch.randn(32, 8).to(device)  # the batch's move: fine
    y = torch.randn(32, 1).to(device)
    mean = MEAN.to(device)  # devtrace: transfers same_content
    h = (x - mean).cpu()
    h = torch.clamp(h, -3, 3).to(device)  # devtrace: transfers round_trip
    loss = nn.functional.mse_loss(model(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, "loss", round(loss.item(), 3))
