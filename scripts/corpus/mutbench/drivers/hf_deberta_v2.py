"""Driver (ours) for Hugging Face transformers' DeBERTa-v2 model code (modeling_deberta_v2.py, copied from the
installed wheel): a 2-layer, 32-wide DebertaV2ForSequenceClassification from a config (no download; relative
position buckets, disentangled attention), a few training steps with a padding mask."""

import torch
from transformers import DebertaV2Config

from modeling_deberta_v2 import DebertaV2ForSequenceClassification

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = DebertaV2Config(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=32, relative_attention=True,
                         position_buckets=8, max_relative_positions=16, pos_att_type=["p2c", "c2p"],
                         pad_token_id=0, num_labels=3)
model = DebertaV2ForSequenceClassification(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids = torch.randint(1, 64, (2, 10), device=device)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    labels = torch.tensor([0, 2], device=device)
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("ok", round(out.loss.item(), 3))
