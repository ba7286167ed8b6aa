# rule: module-never-moved
# code: self.model.to(self.device)
# The script constructs the model inside the call that hands it to a trainer class of its own; the trainer keeps
# the device and moves each batch with it, but not the model. The move goes where the trainer binds the model,
# with its device, not a device literal on the constructor's call in the script.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.hidden = nn.Linear(n_in, 8)
        self.out = nn.Linear(8, n_out)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))


class Trainer:
    def __init__(self, model, lr):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model  # devtrace: fix
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)

    def step(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        loss = F.cross_entropy(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    torch.manual_seed(0)
    trainer = Trainer(Net(4, 3), 0.1)
    for _ in range(3):
        loss = trainer.step(torch.randn(8, 4), torch.randint(0, 3, (8,)))
    print("loss", round(loss, 4))


main()
