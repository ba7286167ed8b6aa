"""Driver (ours) for Hugging Face transformers' BLOOM model code (modeling_bloom.py, copied from the installed
wheel): a 2-layer, 32-wide BloomForCausalLM (ALiBi biases built in forward from the attention mask), a few
training steps on random tokens with a padding mask, then a sequence classifier and greedy generate()."""

import torch
from transformers import BloomConfig

from modeling_bloom import BloomForCausalLM, BloomForSequenceClassification

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = BloomConfig(vocab_size=64, hidden_size=32, n_layer=2, n_head=4, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2, num_labels=3)
model = BloomForCausalLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(3, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
clf = BloomForSequenceClassification(config).to(device)
out2 = clf(input_ids=ids, attention_mask=mask, labels=torch.tensor([0, 2], device=device))
out2.loss.backward()
model.eval()
gen = model.generate(ids[:, :4], attention_mask=mask[:, :4], max_new_tokens=3, do_sample=False)
print("ok", tuple(gen.shape), round(out.loss.item(), 3), round(out2.loss.item(), 3))
