# The fixed twin of bug_token_ids.py.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
vocab = {w: i for i, w in enumerate("<pad> the a cat dog sat ran on mat log fast slow".split())}
sentences = ["the cat sat on the mat", "a dog ran fast", "the dog sat on a log", "a cat ran slow"] * 8
targets = [0, 1, 0, 1] * 8


def collate(batch):
    longest = max(len(s.split()) for s, _ in batch)
    ids = [[vocab[w] for w in s.split()] + [0] * (longest - len(s.split())) for s, _ in batch]
    return torch.tensor(ids), torch.tensor([t for _, t in batch])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(vocab), 16, padding_idx=0)
        self.out = nn.Linear(16, 2)

    def forward(self, ids):
        return self.out(self.embed(ids).mean(dim=1))


model = Classifier().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loader = DataLoader(list(zip(sentences, targets)), batch_size=8, collate_fn=collate)
for epoch in range(3):
    for ids, y in loader:
        ids, y = ids.to(device), y.to(device)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch", epoch, "loss", round(loss.item(), 3))
