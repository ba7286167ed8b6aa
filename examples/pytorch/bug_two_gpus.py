# A model split over two GPUs: the second half lives on cuda:1, but the
# activations of the first half are handed over without a move.
import sys

import torch
import torch.nn as nn

if torch.cuda.device_count() < 2:  # the bug needs two GPUs (DEVTRACE_SIM_CUDA=2 simulates them)
    print("this example needs 2 GPUs; %d found" % torch.cuda.device_count())
    sys.exit(0)
torch.manual_seed(0)
first = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to("cuda:0")
second = nn.Linear(16, 2).to("cuda:1")
opt = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
for step in range(3):
    x = torch.randn(4, 8, device="cuda:0")
    hidden = first(x)  # devtrace: origin  devtrace: fix
    out = second(hidden)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
