"""Driver (ours) for pytorch/examples' legacy SNLI classifier (snli/model.py): a tiny config, batches of random
premise/hypothesis token ids (time-major, as torchtext gave them), a few steps."""

import types

import torch

from model import SNLIClassifier

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = types.SimpleNamespace(n_embed=40, d_embed=16, d_proj=16, projection=True, d_hidden=16, n_layers=1,
                               dp_ratio=0.1, birnn=True, n_cells=2, d_out=3, fix_emb=False)
model = SNLIClassifier(config)
model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = torch.nn.CrossEntropyLoss()
for step in range(3):
    batch = types.SimpleNamespace(premise=torch.randint(0, 40, (7, 4)).to(device),
                                  hypothesis=torch.randint(0, 40, (5, 4)).to(device))
    label = torch.randint(0, 3, (4,)).to(device)
    loss = criterion(model(batch), label)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok", round(loss.item(), 3))
