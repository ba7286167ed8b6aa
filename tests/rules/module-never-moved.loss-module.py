# rule: module-never-moved
# code: self.criterion.to(self.device)
# A loss module of the program's keeps its class weights as a registered buffer; the trainer moves the model and
# each batch to its device but constructs the loss where it is made. The tensor is named from inside the loss's
# own forward (self.weight): the move goes where the trainer binds the loss module, with the trainer's device.
import torch
import torch.nn as nn
import torch.nn.functional as F


class WeightedLoss(nn.Module):
    def __init__(self, n_classes, rare, boost):
        super().__init__()
        weight = torch.ones(n_classes)
        weight[rare] = boost
        self.register_buffer("weight", weight)

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, weight=self.weight)


class Trainer:
    def __init__(self, model, rare):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.criterion = WeightedLoss(3, rare, 2.0)  # devtrace: fix
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        loss = self.criterion(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


torch.manual_seed(0)
trainer = Trainer(nn.Linear(4, 3), 2)
for _ in range(3):
    loss = trainer.step(torch.randn(8, 4), torch.randint(0, 3, (8,)))
print("loss", round(loss, 4))
