# rule: never-moved
# code: total = total.to(device)
# A running sum made as a cpu scalar and added to in place: a cpu scalar may join a GPU op as an input, but
# not as the tensor an in-place op writes. The device check names it; the report does not excuse it.
import torch
import torch.nn as nn


def run(model, batches, device):
    total = torch.zeros(())  # devtrace: fix
    for x in batches:
        loss = model(x.to(device)).pow(2).mean()
        total += loss.detach()
    return total.item()


def main(device):
    torch.manual_seed(0)
    model = nn.Linear(4, 1).to(device)
    print(round(run(model, [torch.randn(3, 4) for _ in range(2)], device), 4))


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
