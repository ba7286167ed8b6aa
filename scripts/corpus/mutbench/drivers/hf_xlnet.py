"""Driver (ours) for Hugging Face transformers' XLNet model code (modeling_xlnet.py, copied from the installed
wheel): a 2-layer, 32-wide XLNetLMHeadModel from a config (no download): relative positional encodings, two
segments with memory (mems) carried from the first to the second, a permutation mask, a training step."""

import torch
from transformers import XLNetConfig

from modeling_xlnet import XLNetLMHeadModel

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = XLNetConfig(vocab_size=64, d_model=32, n_layer=2, n_head=2, d_inner=64, mem_len=8, use_mems_train=True)
model = XLNetLMHeadModel(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 64, (2, 8), device=device)
out = model(input_ids=ids, labels=ids)
opt.zero_grad()
out.loss.backward()
opt.step()
perm = torch.zeros((2, 8, 8), dtype=torch.float, device=device)
perm[:, :, -1] = 1.0
target = torch.zeros((2, 1, 8), dtype=torch.float, device=device)
target[:, 0, -1] = 1.0
with torch.no_grad():
    o = model(input_ids=ids, perm_mask=perm, target_mapping=target)
    o2 = model(input_ids=ids, mems=out.mems)
print("ok", tuple(o.logits.shape), tuple(o2.logits.shape))
