# rule: input-not-moved
# code: tokens = tokens.to(device)
# A data helper given only sizes makes the batches, where no device is bound; the evaluation loop moves the
# lengths it uses and forgets the tokens. The move goes in the loop, with the loop's device, not a device
# literal into the helper.
import torch
import torch.nn as nn


def make_batches(n, bs, seq, vocab):
    out = []
    for _ in range(n):
        tokens = torch.randint(0, vocab, (bs, seq))
        lengths = torch.full((bs,), seq)
        out.append((tokens, lengths))
    return out


class Pool(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, tokens, lengths):
        return self.emb(tokens).sum(1) / lengths[:, None]


def evaluate(model, batches, device):
    total = 0.0
    with torch.no_grad():
        for tokens, lengths in batches:
            lengths = lengths.to(device)
            out = model(tokens, lengths)  # devtrace: fix
            total += out.abs().sum().item()
    return total


def main(device):
    torch.manual_seed(0)
    model = Pool(30, 4).to(device)
    print(round(evaluate(model, make_batches(2, 3, 5, 30), device), 4))


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
