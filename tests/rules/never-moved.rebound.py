# rule: never-moved
# code: weight = weight.to(device)
# Class weights made on the CPU, then passed through a helper that normalises them in place and returns
# them: the name is bound again before the loss reads it, so the move goes after that last binding.
import torch
import torch.nn as nn
import torch.nn.functional as F


def normalise_(w):
    w.div_(w.sum())
    return w


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    weight = torch.tensor([1.0, 2.0, 4.0])
    model = nn.Linear(6, 3).to(device)
    weight = normalise_(weight)  # devtrace: fix
    x = torch.randn(8, 6, device=device)
    y = torch.randint(0, 3, (8,), device=device)
    print("loss", round(F.cross_entropy(model(x), y, weight=weight).item(), 4))


main()
