# Resuming from a checkpoint: the optimizer's state is loaded while the model
# is still on the CPU, so Adam's exp_avg stays there when the model moves.
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
ckpt_path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")


def train_steps(model, opt, steps):
    for _ in range(steps):
        x = torch.randn(16, 10, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


# a first run, saved on the CPU
model = nn.Linear(10, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(16, 10)
model(x).pow(2).mean().backward()
opt.step()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, ckpt_path)

# resume
model = nn.Linear(10, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
ckpt = torch.load(ckpt_path)  # devtrace: fix (move the model before the state is loaded)
model.load_state_dict(ckpt["model"])
opt.load_state_dict(ckpt["opt"])  # devtrace: origin
model.to(device)
print("loss", round(train_steps(model, opt, 5), 4))
