"""Driver (ours) for Diego999/pyGAT's layers.py and models.py: the dense GAT and the sparse SpGAT, each trained a
few steps on a random graph of 30 nodes, as its train.py does (features, adjacency and labels moved with the
model when a GPU is there)."""

import torch
import torch.nn.functional as F

from models import GAT, SpGAT

cuda = torch.cuda.is_available()
torch.manual_seed(0)
n = 30
features = torch.rand(n, 12)
adj = (torch.rand(n, n) > 0.8).float() + torch.eye(n)
labels = torch.randint(0, 3, (n,))
idx_train = torch.arange(20)
for cls in (GAT, SpGAT):
    model = cls(nfeat=12, nhid=8, nclass=3, dropout=0.1, alpha=0.2, nheads=2)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)
    if cuda:
        model.cuda()
        features, adj, labels, idx_train = features.cuda(), adj.cuda(), labels.cuda(), idx_train.cuda()
    for step in range(2):
        model.train()
        out = model(features, adj)
        loss = F.nll_loss(out[idx_train], labels[idx_train])
        opt.zero_grad()
        loss.backward()
        opt.step()
print("ok", round(loss.item(), 3))
