# rule: view-of-unmoved-base
# code: pos = pos.to(ids.device)
# Positions made without a device in a model's forward, expanded to the batch and embedded: the failing op
# has only the embedding's weight for a peer, but the forward received the token ids on the same device.
# The move follows them (device-agnostic model code), not a device literal: the model's class derives from
# a base class of the file, not from nn.Module as written.
import torch
import torch.nn as nn


class PreTrained(nn.Module):
    @property
    def device(self):
        return next(self.parameters()).device


class TokenModel(PreTrained):
    def __init__(self, vocab, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(64, dim)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])  # devtrace: fix
        pos = pos.unsqueeze(0).expand_as(ids)
        return self.tok(ids) + self.pos(pos)


def main(device):
    torch.manual_seed(0)
    model = TokenModel(10, 4).to(device)
    print(model(torch.randint(0, 10, (2, 5), device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
