# The fixed twin of bug_plain_attribute.py: the tensor is a buffer, which Module.to moves.
import torch
import torch.nn as nn


class ScaledHead(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, classes)
        self.register_buffer("temperature", torch.full((classes,), 0.5))

    def forward(self, x):
        return self.fc(x) / self.temperature


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = ScaledHead(6, 3).to(device)
x = torch.randn(5, 6, device=device)
print(model(x).softmax(dim=1).sum().item())
