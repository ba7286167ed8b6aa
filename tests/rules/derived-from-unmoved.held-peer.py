# rule: derived-from-unmoved
# code: torch.arange(..., device=h.device)
# A decoder makes its position ids in forward without a device, then hands them to a rotary embedding that
# mixes them with its buffer: the fix is device= where the ids are made, following a tensor the same forward
# made before and still holds by name (the embeddings h), as library code must: no literal, no caller's name.
import torch
import torch.nn as nn


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, x, positions):
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos()


class Decoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rotary = Rotary(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids, offset=0):
        h = self.embed(ids)
        positions = torch.arange(h.shape[1]) + offset  # devtrace: fix
        positions = positions.unsqueeze(0)
        h = self.rotary(h, positions)
        return self.out(h)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = Decoder(32, 8).to(device)
    ids = torch.randint(0, 32, (2, 6), device=device)
    logits = model(ids)
    print("logits", tuple(logits.shape))


main()
