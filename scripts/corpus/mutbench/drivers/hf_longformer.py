"""Driver (ours) for Hugging Face transformers' Longformer model code (modeling_longformer.py, copied from the
installed wheel): a 2-layer, 32-wide LongformerForSequenceClassification with a 4-token sliding window (the
input padded to the window in forward, banded attention built from index tensors) and global attention on the
first token, a few training steps on random tokens with a padding mask."""

import torch
from transformers import LongformerConfig

from modeling_longformer import LongformerForSequenceClassification

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = LongformerConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, attention_window=[4, 4], max_position_embeddings=40, pad_token_id=1,
                          num_labels=3)
model = LongformerForSequenceClassification(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(3, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    out = model(input_ids=ids, attention_mask=mask, global_attention_mask=glob, labels=torch.tensor([0, 2], device=device))
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("ok", round(out.loss.item(), 3))
