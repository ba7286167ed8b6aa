# rule: input-not-moved
# code: y = y.to(x.device)
# A toy dataset made at the top as lists of cpu tensors; the training function moves each input where it
# uses it (the .cuda() idiom, no device variable) and forgets the targets. The move goes where the batch is
# used, with the device of the input it moves, not a device literal into the dataset's list.
import torch
import torch.nn as nn


def train(model, data, targets):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(data, targets):
        if torch.cuda.is_available():
            x = x.cuda()
        loss = ((model(x) - y) ** 2).mean()  # devtrace: fix
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


torch.manual_seed(0)
model = nn.Linear(4, 2)
if torch.cuda.is_available():
    model.cuda()
data = [torch.randn(3, 4) for _ in range(3)]
targets = [torch.randn(3, 2) for _ in range(3)]
print(round(train(model, data, targets), 4))
