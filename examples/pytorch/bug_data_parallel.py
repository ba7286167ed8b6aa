# nn.DataParallel over two GPUs gathers its outputs on device_ids[0] (cuda:0),
# but the labels are sent to the process's "local" GPU, cuda:1, as a
# launcher's LOCAL_RANK would have it.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

if torch.cuda.device_count() < 2:  # the bug needs two GPUs (DEVTRACE_SIM_CUDA=2 simulates them)
    print("this example needs 2 GPUs; %d found" % torch.cuda.device_count())
    sys.exit(0)
torch.manual_seed(0)
local_rank = int(os.environ.get("LOCAL_RANK", "1"))
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4)).to("cuda:0")
parallel = nn.DataParallel(model, device_ids=[0, 1])
opt = torch.optim.SGD(parallel.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 10).to("cuda:0")
    y = torch.randint(0, 4, (16,)).to(f"cuda:{local_rank}")  # devtrace: origin  devtrace: fix
    loss = F.cross_entropy(parallel(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
