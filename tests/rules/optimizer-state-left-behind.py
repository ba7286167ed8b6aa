# rule: optimizer-state-left-behind
# code: model.to(device)
# Resuming a run: the optimizer's momentum buffers are loaded while the model is still on the CPU; the
# model is moved afterwards and the buffers stay behind, so the first step mixes devices.
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
path = os.path.join(tempfile.mkdtemp(), "last.pt")
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model(torch.randn(4, 8)).pow(2).mean().backward()
optimizer.step()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)

model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
state = torch.load(path)  # devtrace: fix
model.load_state_dict(state["model"])
optimizer.load_state_dict(state["optimizer"])
model.to(device)
for step in range(3):
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
