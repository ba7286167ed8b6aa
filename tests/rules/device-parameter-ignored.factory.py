# rule: device-parameter-ignored
# code: torch.arange(..., device=device)
# A positional-embedding module's helper method is handed the device of the tokens it embeds and makes the
# positions without it; the model must run on any device, so the fix is device= inside the method.
import torch
import torch.nn as nn


class PositionalEmbedding(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.table = nn.Embedding(max_len, dim)

    def positions(self, length, device):
        return torch.arange(length)  # devtrace: fix

    def forward(self, tokens):
        pos = self.positions(tokens.size(1), tokens.device)
        return tokens + self.table(pos)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    emb = PositionalEmbedding(16, 8).to(device)
    tokens = torch.randn(2, 5, 8, device=device)
    print("out", round(emb(tokens).sum().item(), 4))


main()
