# rule: never-moved
# code: positions = positions.to(next(self.parameters()).device)
# A positional embedding that subclasses nn.Embedding (not nn.Module by name) makes its positions where no
# device is bound. Model code runs wherever its module was moved: the move follows the module's own device,
# which the producer knows the class has (it asks the class, whatever its bases are called), not a literal.
import torch
import torch.nn as nn


class Positions(nn.Embedding):
    def forward(self, seq_len):
        positions = torch.arange(seq_len)  # devtrace: fix
        return super().forward(positions)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = Positions(16, 8)

    def forward(self, ids):
        return self.tok(ids) + self.pos(ids.size(1))


def main(device):
    torch.manual_seed(0)
    model = Tagger().to(device)
    print(round(model(torch.randint(0, 20, (2, 5), device=device)).sum().item(), 4))


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
