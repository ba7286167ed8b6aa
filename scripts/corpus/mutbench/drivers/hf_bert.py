"""Driver (ours) for Hugging Face transformers' BERT model code (modeling_bert.py, copied from the installed
wheel): a 2-layer, 32-wide BertForMaskedLM from a config (no download), a few training steps on random tokens
with a padding mask and the default token_type_ids, then a sequence classifier on the same encoder."""

import torch
from transformers import BertConfig

from modeling_bert import BertForMaskedLM, BertForSequenceClassification

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32, pad_token_id=0, num_labels=3)
model = BertForMaskedLM(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(1, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
clf = BertForSequenceClassification(config).to(device)
labels = torch.tensor([0, 2], device=device)
out2 = clf(input_ids=ids, attention_mask=mask, labels=labels)
out2.loss.backward()
print("ok", round(out.loss.item(), 3), round(out2.loss.item(), 3))
