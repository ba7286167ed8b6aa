"""Driver (ours) for Hugging Face transformers' T5 model code (modeling_t5.py, copied from the installed wheel):
a 2-layer, 32-wide T5ForConditionalGeneration from a config (no download), relative position buckets in
encoder and decoder, a few training steps, then greedy generate()."""

import torch
from transformers import T5Config

from modeling_t5 import T5ForConditionalGeneration

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=2,
                  relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
model = T5ForConditionalGeneration(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    src = torch.randint(2, 64, (2, 9), device=device)
    tgt = torch.randint(2, 64, (2, 5), device=device)
    out = model(input_ids=src, attention_mask=torch.ones_like(src), labels=tgt)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
model.eval()
gen = model.generate(src, max_new_tokens=3, do_sample=False)
print("ok", tuple(gen.shape), round(out.loss.item(), 3))
