# rule: module-never-moved
# code: if use_cuda: model = model.cuda()
# A script in the .cuda() idiom: it moves each batch with .cuda() under its own flag and names no device. The
# model's move is written the same way, under the same flag: a device literal ("cuda:0") would break the run
# on a machine without a GPU, which the script supports.
import torch
import torch.nn as nn
import torch.nn.functional as F

use_cuda = torch.cuda.is_available()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))  # devtrace: fix
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    if use_cuda:
        x, y = x.cuda(), y.cuda()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
