"""Driver (ours) for Hugging Face transformers' Llama model code (modeling_llama.py, copied from the installed
wheel): a 2-layer, 32-wide LlamaForCausalLM from a config (no download; rotary embeddings, grouped-query
attention), a few training steps on random tokens with a padding mask, then greedy generate() with the cache."""

import torch
from transformers import LlamaConfig

from modeling_llama import LlamaForCausalLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     pad_token_id=0, bos_token_id=1, eos_token_id=2)
model = LlamaForCausalLM(config).to(device)
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
