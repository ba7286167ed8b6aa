# rule: module-never-moved
# code: self.model.to(self.device)
# The script builds the model where no device is bound and hands it to a trainer class of its own, which picks
# the device and moves each batch with it, but never the model. The move goes where the trainer keeps both,
# after it picks the device (past both branches of the choice), not a device literal into the script.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, lr=0.1, device="auto"):
        self.model = model
        if device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            self.device = device
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)  # devtrace: fix

    def step(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        loss = F.cross_entropy(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    trainer = Trainer(model)
    for _ in range(2):
        loss = trainer.step(torch.randn(4, 6), torch.randint(0, 3, (4,)))
    print(round(loss, 4))


main()
