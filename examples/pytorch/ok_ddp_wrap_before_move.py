# The fixed twin of bug_ddp_wrap_before_move.py: the model is moved to the rank's GPU, then wrapped.
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2


def train(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=WORLD)
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    torch.manual_seed(rank)
    weight = torch.tensor([1.0, 2.0, 1.0]).to(device)  # the classes' weights in the loss
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    model.to(device)
    ddp = DDP(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(16, 8)  # DDP moves the forward's inputs to cuda:<rank>
        y = torch.randint(0, 3, (16,)).to(device)
        loss = F.cross_entropy(ddp(x), y, weight=weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print("loss", round(loss.item(), 3))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    if torch.cuda.device_count() < WORLD:  # the bug needs two GPUs (DEVTRACE_SIM_CUDA=2 simulates them)
        print("this example needs %d GPUs; %d found" % (WORLD, torch.cuda.device_count()))
        sys.exit(0)
    mp.spawn(train, args=(free_port(),), nprocs=WORLD)
