"""Driver (ours) for Hugging Face transformers' CTRL model code (modeling_ctrl.py, copied from the installed
wheel): a 2-layer, 32-wide CTRLLMHeadModel from a config (no download; sinusoidal position encodings made at
construction, a causal mask made in forward), a few training steps, then greedy generate() with past_key_values."""

import torch
from transformers import CTRLConfig

from modeling_ctrl import CTRLLMHeadModel

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = CTRLConfig(vocab_size=64, n_positions=32, n_embd=32, dff=64, n_layer=2, n_head=2, pad_token_id=0)
model = CTRLLMHeadModel(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(1, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
model.eval()
gen = model.generate(ids[:, :4], attention_mask=mask[:, :4], max_new_tokens=3, do_sample=False)
print("ok", tuple(gen.shape), round(out.loss.item(), 3))
