# bug_torchrun_labels.py with its bug fixed: the labels are moved to the rank's GPU
# (torchrun --nproc_per_node 2 ok_torchrun_labels.py).
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    ddp = DDP(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(16, 8)  # DDP moves the forward's inputs to cuda:<rank>
        y = torch.randint(0, 3, (16,)).to(device)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if dist.get_rank() == 0:
        print("loss", round(loss.item(), 3))
    dist.destroy_process_group()


if __name__ == "__main__":
    if "LOCAL_RANK" not in os.environ:
        print("start it with torchrun: torchrun --nproc_per_node 2 %s" % sys.argv[0])
        sys.exit(0)
    if torch.cuda.device_count() < int(os.environ.get("LOCAL_WORLD_SIZE", "1")):
        print("this example needs a GPU per worker; %d found" % torch.cuda.device_count())
        sys.exit(0)
    main()
