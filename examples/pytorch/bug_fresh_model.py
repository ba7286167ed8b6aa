# The batch and the labels go to the GPU; the freshly built model is never
# moved. Two of the first layer's three operands (weight, bias) are on the
# CPU: counting operands would blame the input the program moved on purpose.
# On a GPU server: "Expected all tensors to be on the same device ... cuda:0 and cpu!" in the linear layer.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
x = torch.randn(64, 20).to(device)
y = torch.randint(0, 4, (64,)).to(device)
model = nn.Linear(20, 4)  # devtrace: origin  devtrace: fix
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
