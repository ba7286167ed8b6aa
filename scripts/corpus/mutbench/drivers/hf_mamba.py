"""Driver (ours) for Hugging Face transformers' Mamba model code (modeling_mamba.py, copied from the installed
wheel): a 2-layer, 32-wide MambaForCausalLM from a config (no download; the slow selective-scan path with its
recurrent state and conv cache), a few training steps, then greedy generate() with the cache."""

import torch
from transformers import MambaConfig

from modeling_mamba import MambaForCausalLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = MambaConfig(vocab_size=64, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
                     pad_token_id=0, bos_token_id=1, eos_token_id=2)
model = MambaForCausalLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(3, 64, (2, 10), device=device)
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
model.eval()
gen = model.generate(ids[:, :4], max_new_tokens=3, do_sample=False)
print("ok", tuple(gen.shape), round(out.loss.item(), 3))
