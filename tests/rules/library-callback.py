# rule: library-callback
# code: lengths = lengths.to(device)
# Variable-length sequences: the collate_fn pads them and returns their lengths, made on the CPU; the loop
# moves the padded batch but not the lengths, which build the padding mask on the GPU.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def collate(batch):
    padded = nn.utils.rnn.pad_sequence([seq for seq, _ in batch], batch_first=True)
    lengths = torch.tensor([len(seq) for seq, _ in batch])
    return padded, lengths


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
sequences = [(torch.randn(int(n), 8), 0) for n in torch.randint(2, 9, (24,))]
loader = DataLoader(sequences, batch_size=6, collate_fn=collate)
encoder = nn.Linear(8, 8).to(device)
for padded, lengths in loader:  # devtrace: fix
    padded = padded.to(device)
    positions = torch.arange(padded.size(1), device=device)
    mask = positions[None, :] < lengths[:, None]
    pooled = (encoder(padded) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
print("pooled", round(pooled.norm().item(), 4))
