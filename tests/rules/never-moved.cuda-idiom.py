# rule: never-moved
# code: if args.cuda: weights = weights.cuda()
# The script moves its model and batches with .cuda() when its --cuda flag allows it and names no device; the
# class weights it makes are never moved. The fix moves them the program's way, under its condition, so the
# script still runs where it has no GPU.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

torch.manual_seed(0)
model = nn.Linear(5, 3)
if args.cuda:
    model.cuda()
weights = torch.tensor([1.0, 2.0, 0.5])  # devtrace: fix
for step in range(2):
    data, target = torch.randn(4, 5), torch.randint(0, 3, (4,))
    data = data.cuda() if args.cuda else data
    target = target.cuda() if args.cuda else target
    loss = F.cross_entropy(model(data), target, weight=weights)
print(round(loss.item(), 4))
