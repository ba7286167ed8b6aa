# rule: never-moved
# code: prompt = prompt.to(trainer.device)
# The device lives in a trainer object of the program's (self.device, set in its constructor and used by its
# methods). The script makes a prompt with no device and hands it to the model the trainer moved: the fix follows
# the trainer's device by the name the script holds it by, not a device literal.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)

    def fit(self, x, y, steps):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        x, y = x.to(self.device), y.to(self.device)
        for _ in range(steps):
            loss = nn.functional.cross_entropy(self.model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss.item()


torch.manual_seed(0)
trainer = Trainer(nn.Sequential(nn.Embedding(10, 8), nn.Flatten(), nn.Linear(24, 10)))
trainer.fit(torch.randint(0, 10, (16, 3)), torch.randint(0, 10, (16,)), 3)
prompt = torch.tensor([[1, 2, 3]])  # devtrace: fix
print(trainer.model(prompt).argmax(-1).tolist())
