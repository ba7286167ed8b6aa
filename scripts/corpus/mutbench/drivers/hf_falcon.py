"""Driver (ours) for Hugging Face transformers' Falcon model code (modeling_falcon.py, copied from the installed
wheel): a 2-layer, 32-wide FalconForCausalLM with ALiBi position biases (made in forward from the attention
mask), a few training steps on random tokens with a padding mask, then greedy generate() with the cache."""

import torch
from transformers import FalconConfig

from modeling_falcon import FalconForCausalLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = FalconConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True,
                      new_decoder_architecture=False, multi_query=False, parallel_attn=False, bias=True,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
model = FalconForCausalLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(3, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
model.eval()
gen = model.generate(ids[:, :4], attention_mask=mask[:, :4], max_new_tokens=3, do_sample=False)
print("ok", tuple(gen.shape), round(out.loss.item(), 3))
