# rule: made-before-source-moved
# code: if args.cuda: model.cuda()
# The same L2-SP penalty in a script of the .cuda() idiom: the anchors are copied before the model is moved
# with `model.cuda()` under the script's own flag. The move goes first as the script writes it, under the same
# flag, so that the script still runs where no GPU is.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--cpu", action="store_true")
args = parser.parse_args()
args.cuda = torch.cuda.is_available() and not args.cpu
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))
anchors = [p.detach().clone() for p in model.parameters()]  # devtrace: fix
if args.cuda:
    model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    if args.cuda:
        x, y = x.cuda(), y.cuda()
    penalty = sum(((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchors))
    loss = F.cross_entropy(model(x), y) + 0.01 * penalty
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
