"""Driver (ours) for Hugging Face transformers' RWKV model code (modeling_rwkv.py, copied from the installed
wheel): a 2-layer, 32-wide RwkvForCausalLM from a config (no download), a training step, then the recurrent
path: the state returned by one call fed to the next, token by token."""

import torch
from transformers import RwkvConfig

from modeling_rwkv import RwkvForCausalLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = RwkvConfig(vocab_size=64, context_length=32, hidden_size=32, num_hidden_layers=2,
                    attention_hidden_size=32, intermediate_size=64)
model = RwkvForCausalLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 64, (2, 8), device=device)
out = model(input_ids=ids, labels=ids)
opt.zero_grad()
out.loss.backward()
opt.step()
model.eval()
with torch.no_grad():
    o = model(input_ids=ids[:, :4], use_cache=True)
    state = o.state
    for i in range(4, 7):
        o = model(input_ids=ids[:, i:i + 1], state=state, use_cache=True)
        state = o.state
print("ok", tuple(o.logits.shape), round(out.loss.item(), 3))
