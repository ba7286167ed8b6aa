# Predictions are copied to the CPU for a metric, and the copy is then
# reused in the loss next to the targets on the GPU.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4, device=device)
    target = torch.randn(8, 1, device=device)
    pred = model(x).cpu()  # devtrace: origin
    mae = (pred - target.cpu()).abs().mean().item()
    loss = nn.functional.mse_loss(pred, target)  # devtrace: fix
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, "mae", round(mae, 3))
