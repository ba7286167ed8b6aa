# rule: plain-attribute
# code: self.register_buffer("pe", None)
# A positional encoding built in a module's constructor under a local name and stored as a plain attribute
# by a later statement: the encoding module has no parameter of its own, the model's move leaves the table on
# the CPU, and the buffer is registered right before the statement that stores it.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=0.1)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        pe[:, 0::2] = torch.sin(position * 0.1)
        pe[:, 1::2] = torch.cos(position * 0.1)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.pe = pe  # devtrace: fix

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.pos = PositionalEncoding(8)

    def forward(self, x):
        return self.pos(self.inp(x))


model = Model().to(device)
x = torch.randn(10, 2, 4).to(device)
print("out", round(model(x).sum().item(), 4))
