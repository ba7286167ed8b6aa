# Char-level LSTM language model with the classic init_hidden() helper that
# builds (h0, c0) with torch.zeros and no device.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class CharLSTM(nn.Module):
    def __init__(self, vocab, hidden, layers=2):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.embed = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def init_hidden(self, batch_size):
        h0 = torch.zeros(self.layers, batch_size, self.hidden)  # devtrace: origin
        c0 = torch.zeros(self.layers, batch_size, self.hidden)  # devtrace: fix (after both)
        return h0, c0

    def forward(self, x, state):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM(50, 64).to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
text = torch.randint(0, 50, (8, 65))
for step in range(3):
    inp, tgt = text[:, :-1].to(device), text[:, 1:].to(device)
    state = model.init_hidden(inp.size(0))
    logits, state = model(inp, state)
    loss = F.cross_entropy(logits.reshape(-1, 50), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
