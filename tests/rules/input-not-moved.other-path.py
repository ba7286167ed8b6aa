# rule: input-not-moved
# code: x = x.to(device)
# The training step moves each batch it is handed; the evaluation loop, another way to the same model,
# forgets the inputs. The move goes in the evaluation loop, where the program holds them, not beside the
# training step's move, which the failing path never passes.
import torch
import torch.nn as nn
import torch.nn.functional as F


def train_step(model, opt, x, y, device):
    x, y = x.to(device), y.to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def evaluate(model, xs, ys, device):
    correct = 0
    with torch.no_grad():
        for x, y in zip(xs, ys):
            pred = model(x).argmax(-1)  # devtrace: fix
            correct += (pred == y.to(device)).sum().item()
    return correct


def main(device):
    torch.manual_seed(0)
    xs = [torch.randn(8, 6) for _ in range(4)]
    ys = [torch.randint(0, 3, (8,)) for _ in range(4)]
    model = nn.Linear(6, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(xs, ys):
        train_step(model, opt, x, y, device)
    print(evaluate(model, xs, ys, device))


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
