"""Driver (ours) for pytorch/examples' minGPT-ddp model (mingpt/model.py) on one device: a tiny GPT built from an
explicit config, a few steps of its own optimizer on random tokens, then generate()."""

import torch

from mingpt.model import GPT, GPTConfig, OptimizerConfig, create_optimizer

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = GPT(GPTConfig(model_type=None, n_layer=2, n_head=2, n_embd=32, vocab_size=40, block_size=12))
model = model.to(device)
opt = create_optimizer(model, OptimizerConfig(learning_rate=1e-3))
for step in range(3):
    x = torch.randint(0, 40, (4, 12)).to(device)
    logits, loss = model(x, x)
    opt.zero_grad()
    loss.backward()
    opt.step()
out = model.generate(x[:1, :4], 5, do_sample=True, top_k=5)
print("ok", tuple(out.shape), round(loss.item(), 3))
