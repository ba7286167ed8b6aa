# rule: module-never-moved
# code: if args.cuda: model = model.cuda()
# The training function holds the whole dataset as `x` and copies each batch cut from it to the GPU; only the
# model's forward calls the batch `x`. The `x` where the model is made is the dataset, on the cpu: its device is
# no peer's (model.to(x.device) would move nothing). The script names no device, so the move is its own
# .cuda() under its own flag.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(x)


def batches(x, y, size):
    for i in range(0, x.size(0), size):
        yield x[i:i + size], y[i:i + size]


def train():
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    model = Net()  # devtrace: fix
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for data, target in batches(x, y, 8):
        if args.cuda:
            data, target = data.cuda(), target.cuda()
        loss = F.cross_entropy(model(data), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


print(round(train(), 4))
