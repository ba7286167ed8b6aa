"""Driver (ours) for pytorch/examples' tensor-parallel Llama 2 model (llama2_model.py) on one device: a tiny
Transformer, its rotary tables made on the meta-free path, a few training steps on random tokens."""

import torch

from llama2_model import ModelArgs, Transformer

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
args = ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64, multiple_of=16, max_seq_len=32)
model = Transformer.from_model_args(args)
model.init_weights()
model = model.to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    tokens = torch.randint(0, 64, (2, 16), device=device)
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok", round(loss.item(), 3))
