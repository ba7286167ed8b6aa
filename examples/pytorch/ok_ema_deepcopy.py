# The fixed twin of bug_ema_deepcopy.py: the shadow model is moved with the model.
import copy
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
ema_model = copy.deepcopy(model).to(device)
model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)


@torch.no_grad()
def ema_update(ema, net, decay=0.999):
    for e, p in zip(ema.parameters(), net.parameters()):
        e.mul_(decay).add_(p, alpha=1 - decay)


for step in range(3):
    x = torch.randn(4, 3, 16, 16, device=device)
    y = torch.randint(0, 10, (4,), device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema_update(ema_model, model)
print("loss", round(loss.item(), 3))
