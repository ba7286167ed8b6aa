# rule: made-in-callee
# code: torch.arange(..., device=ids.device)
# absent: pos = pos.to(
# A helper of the model's file makes the position ids of a batch it is handed; it makes them with torch.arange
# and no device and returns them, and the model's forward embeds them next to the batch. The helper has the batch in hand: the
# positions are made on its device there (device=ids.device), for every caller and on any device, not moved
# by the one forward that failed (with the script's device name, which model code does not have).
import torch
import torch.nn as nn


def position_ids(ids, offset=0):
    length = ids.size(1)
    pos = torch.arange(offset, offset + length)  # devtrace: fix
    return pos


class Embedder(nn.Module):
    def __init__(self, vocab, width, length):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(length, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        pos = position_ids(ids)
        return self.head(self.tok(ids) + self.pos(pos))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = Embedder(16, 8, 32).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    ids = torch.randint(0, 16, (4, 6)).to(device)
    logits = model(ids)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 16), ids.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
