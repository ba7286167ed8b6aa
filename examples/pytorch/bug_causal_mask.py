# Causal self-attention that keeps its mask as a plain attribute (modelled on
# karpathy/nanoGPT model.py, whose CausalSelfAttention registers it as the
# buffer "bias"): Module.to leaves it on the CPU, and the comparison that
# makes the boolean mask in forward runs there too.
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.bias = torch.tril(torch.ones(block_size, block_size)).view(1, block_size, block_size)  # devtrace: origin  devtrace: fix

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / C ** 0.5)
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        return self.c_proj(F.softmax(att, dim=-1) @ v)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = CausalSelfAttention(16, 8).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(4, 8, 16, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
