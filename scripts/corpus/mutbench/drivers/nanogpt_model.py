"""Driver (ours) for karpathy/nanoGPT's model.py: a tiny GPT trained a few steps on random tokens on whatever
device torch offers, then a short generate()."""

import torch

from model import GPT, GPTConfig

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = GPT(GPTConfig(block_size=16, vocab_size=50, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True))
model.to(device)
opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cuda" if device == "cuda" else "cpu")
for step in range(3):
    x = torch.randint(0, 50, (4, 16), device=device)
    y = torch.randint(0, 50, (4, 16), device=device)
    logits, loss = model(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
out = model.generate(torch.zeros((1, 1), dtype=torch.long, device=device), 6, temperature=1.0, top_k=5)
model.crop_block_size(8)
print("ok", out.shape, round(loss.item(), 3))
