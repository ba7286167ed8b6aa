# rule: derived-from-unmoved
# code: types = types.to(device)
# Token types made without a device when the caller gave none, then padded with the ids by a helper whose
# result the forward binds to the same names: the padded types are computed from the ones made here, so the
# move goes where they are made, not after the padding (which would move them as well, one step later).
import torch
import torch.nn as nn
import torch.nn.functional as F


def pad_to_multiple(ids, types, multiple):
    pad = (-ids.shape[1]) % multiple
    return F.pad(ids, (0, pad)), F.pad(types, (0, pad))


class Encoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.typ = nn.Embedding(2, dim)

    def forward(self, ids, types=None):
        device = ids.device
        if types is None:
            types = torch.zeros(ids.shape, dtype=torch.long)  # devtrace: fix
        ids, types = pad_to_multiple(ids, types, 4)
        return self.tok(ids) + self.typ(types)


def main(device):
    torch.manual_seed(0)
    model = Encoder(10, 4).to(device)
    print(model(torch.randint(0, 10, (2, 6), device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
