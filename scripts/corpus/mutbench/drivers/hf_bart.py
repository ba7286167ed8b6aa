"""Driver (ours) for Hugging Face transformers' BART model code (modeling_bart.py, copied from the installed
wheel): a 1+1-layer, 32-wide BartForConditionalGeneration from a config (no download), learned positions, a
padding mask, a few training steps, then greedy generate()."""

import torch
from transformers import BartConfig

from modeling_bart import BartForConditionalGeneration

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = BartConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32,
                    pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
model = BartForConditionalGeneration(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    src = torch.randint(3, 64, (2, 9), device=device)
    mask = torch.ones_like(src)
    mask[0, -2:] = 0
    tgt = torch.randint(3, 64, (2, 6), device=device)
    out = model(input_ids=src, attention_mask=mask, labels=tgt)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
model.eval()
gen = model.generate(src, attention_mask=mask, max_new_tokens=3, do_sample=False, num_beams=1)
print("ok", tuple(gen.shape), round(out.loss.item(), 3))
