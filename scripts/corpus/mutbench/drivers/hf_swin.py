"""Driver (ours) for Hugging Face transformers' Swin Transformer model code (modeling_swin.py, copied from the
installed wheel): a 2-stage, 16-wide SwinForImageClassification on 32x32 images (windowed attention with a
relative position index buffer, shifted windows whose attention mask is made in forward), a few training steps
on random images."""

import torch
from transformers import SwinConfig

from modeling_swin import SwinForImageClassification

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
config = SwinConfig(image_size=32, patch_size=4, num_channels=3, embed_dim=16, depths=[2, 1], num_heads=[2, 2],
                    window_size=4, num_labels=3)
model = SwinForImageClassification(config).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    images = torch.randn(2, 3, 32, 32, device=device)
    labels = torch.tensor([0, 2], device=device)
    out = model(pixel_values=images, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("ok", round(out.loss.item(), 3))
