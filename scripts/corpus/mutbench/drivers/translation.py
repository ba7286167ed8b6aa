"""Driver (ours) for pytorch/examples' language_translation model (src/model.py): a tiny Translator, masks made
as the example's training loop makes them, a few steps, then a greedy decode with encode()/decode()."""

import torch

from src.model import Translator

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = Translator(1, 1, 16, 2, 30, 30, 32, 0.1).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def square_mask(n):
    mask = (torch.triu(torch.ones((n, n), device=device)) == 1).transpose(0, 1)
    return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)


for step in range(3):
    src = torch.randint(3, 30, (6, 2), device=device)
    tgt = torch.randint(3, 30, (5, 2), device=device)
    tgt_in = tgt[:-1, :]
    src_mask = torch.zeros((6, 6), device=device).type(torch.bool)
    tgt_mask = square_mask(4)
    src_pad = (src == 1).transpose(0, 1)
    tgt_pad = (tgt_in == 1).transpose(0, 1)
    logits = model(src, tgt_in, src_mask, tgt_mask, src_pad, tgt_pad, src_pad)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 30), tgt[1:, :].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
memory = model.encode(src[:, :1], torch.zeros((6, 6), device=device).type(torch.bool))
ys = torch.ones(1, 1).fill_(2).type(torch.long).to(device)
for i in range(3):
    out = model.decode(ys, memory, square_mask(ys.size(0)).type(torch.bool))
    nxt = model.ff(out[-1]).argmax(dim=1).item()
    ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(nxt)], dim=0)
print("ok", round(loss.item(), 3), ys.flatten().tolist())
