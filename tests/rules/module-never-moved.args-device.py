# rule: module-never-moved
# code: model = model.to(args.device)
# The script keeps its device on the argparse namespace (args.device = torch.device(...)) and moves each batch
# with it in its training function; the function that builds the model forgets the model's move. The fix uses
# the program's own expression, bound at the top of the file, not a device literal.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()
args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 4).to(args.device)
        y = torch.randint(0, 3, (8,)).to(args.device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))  # devtrace: fix
    print("loss", round(train(model, args.steps), 4))


main()
