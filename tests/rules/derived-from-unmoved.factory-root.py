# rule: derived-from-unmoved
# code: h_idx = h_idx.to(device)
# A shifted-window attention mask (Swin's shape) built from two position ranges; the row range is made
# without device=. The names on the way (h_region) are only comparisons of that range: the fix goes where the
# range is made, in the function that was handed the device, not on the first name its values got.
import torch
import torch.nn as nn


class WindowMask(nn.Module):
    def __init__(self, window, shift):
        super().__init__()
        self.window, self.shift = window, shift

    def get_attn_mask(self, height, width, device):
        h_idx = torch.arange(height)  # devtrace: fix
        w_idx = torch.arange(width, device=device)
        h_region = (h_idx >= height - self.window).long() + (h_idx >= height - self.shift).long()
        w_region = (w_idx >= width - self.window).long() + (w_idx >= width - self.shift).long()
        img_mask = h_region[:, None] * 3 + w_region[None, :]
        return (img_mask.flatten()[None, :] != img_mask.flatten()[:, None]).float() * -100.0

    def forward(self, x):
        mask = self.get_attn_mask(x.shape[1], x.shape[2], x.device)
        return x.flatten(1) @ mask.softmax(-1)


def main(device):
    layer = WindowMask(2, 1).to(device)
    print(layer(torch.randn(2, 4, 4, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
