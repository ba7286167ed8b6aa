# rule: temporary-in-expression
# code: torch.arange(..., device=device)
# A tiny GPT-style embedding: the position ids are made inline with torch.arange and no device.
import torch
import torch.nn as nn


class Embeddings(nn.Module):
    def __init__(self, vocab, block, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)

    def forward(self, idx):
        T = idx.size(1)
        return self.tok(idx) + self.pos(torch.arange(T))  # devtrace: fix


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
emb = Embeddings(50, 16, 8).to(device)
idx = torch.randint(0, 50, (4, 16)).to(device)
print("norm", round(emb(idx).norm().item(), 3))
