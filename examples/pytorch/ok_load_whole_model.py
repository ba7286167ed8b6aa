# The fixed twin of bug_load_whole_model.py: the model is loaded back where it was
# saved from (torch.load without map_location), as word_language_model does.
import inspect
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
# a whole model is a pickle of its classes: torch.load reads it only with weights_only=False, which 2.6 and
# later must be told (1.13 to 2.5 take it too; older ones have no such parameter)
whole = {"weights_only": False} if "weights_only" in inspect.signature(torch.load).parameters else {}
save = os.path.join(tempfile.mkdtemp(), "model.pt")
model = nn.Sequential(nn.Embedding(30, 16), nn.Linear(16, 30)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
train_data = torch.randint(0, 30, (64,)).to(device)
test_data = torch.randint(0, 30, (32,)).to(device)
for epoch in range(2):
    loss = F.cross_entropy(model(train_data[:-1]), train_data[1:])
    opt.zero_grad()
    loss.backward()
    opt.step()
    with open(save, "wb") as f:
        torch.save(model, f)
with open(save, "rb") as f:
    model = torch.load(f, **whole)
with torch.no_grad():
    test_loss = F.cross_entropy(model(test_data[:-1]), test_data[1:])
print("test loss", round(test_loss.item(), 4))
