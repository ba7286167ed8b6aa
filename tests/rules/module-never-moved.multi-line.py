# rule: module-never-moved
# code: model = model.to(device)
# A model built by one statement over several lines (nn.Sequential with a layer a line), never moved: the move
# goes after the whole statement, and the fix names the statement by its first line, not the inner line where
# the first layer's weight was made.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(  # devtrace: fix
    nn.Linear(8, 16),
    nn.ReLU(),
    nn.Linear(16, 2),
)
x = torch.randn(4, 8).to(device)
print(model(x).sum().item())
