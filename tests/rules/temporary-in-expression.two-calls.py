# rule: temporary-in-expression
# code: torch.zeros(..., device=device)
# An LSTM given its (h0, c0) made inline on the CPU: both calls need device=, or the program fails
# again at the other one.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 12, batch_first=True)
        self.out = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.rnn(x, (torch.zeros(1, x.size(0), 12), torch.zeros(1, x.size(0), 12)))  # devtrace: fix
        return self.out(out[:, -1])


model = Tagger().to(device)
x = torch.randn(4, 5, 6).to(device)
print(model(x).shape)
