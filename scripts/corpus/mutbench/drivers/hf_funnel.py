"""Driver (ours) for Hugging Face transformers' Funnel Transformer model code (modeling_funnel.py, copied from
the installed wheel): a 2-block, 32-wide FunnelForMaskedLM (pooling between blocks, relative positional
attention whose position tables are made in forward, an upsampling decoder), a few training steps on random
tokens with a padding mask and token types."""

import torch
from transformers import FunnelConfig

from modeling_funnel import FunnelForMaskedLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = FunnelConfig(vocab_size=64, block_sizes=[1, 1], block_repeats=[1, 1], num_decoder_layers=1, d_model=32,
                      n_head=4, d_head=8, d_inner=64, pad_token_id=0)
model = FunnelForMaskedLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(1, 64, (2, 8), device=device)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    types = torch.zeros_like(ids)
    types[:, 4:] = 1
    out = model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("ok", round(out.loss.item(), 3))
