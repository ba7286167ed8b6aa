# rule: temporary-in-expression
# code: torch.zeros(..., device=next(self.parameters()).device)
# A recurrent model's init_hidden builds the initial (h, c) inside its return, with no tensor of its own to
# take a device from; the module has parameters, and the state belongs where they are: on any device.
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Embedding(vocab, 8)
        self.rnn = nn.LSTM(8, hidden)
        self.head = nn.Linear(hidden, 3)

    def init_hidden(self, batch):
        return (torch.zeros(1, batch, self.hidden),  # devtrace: fix
                torch.zeros(1, batch, self.hidden))

    def forward(self, tokens, state):
        out, state = self.rnn(self.embed(tokens), state)
        return self.head(out), state


torch.manual_seed(0)
use_cuda = torch.cuda.is_available()
model = Tagger(20, 6)
tokens = torch.randint(0, 20, (5, 2))
if use_cuda:
    model, tokens = model.cuda(), tokens.cuda()
scores, _ = model(tokens, model.init_hidden(2))
print("scores", tuple(scores.shape))
