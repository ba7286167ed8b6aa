# rule: derived-from-unmoved
# code: steps = steps.to(device)
# A model that embeds the step number it is given: the embedding is computed inside the model from the steps its
# caller passes, so it is on whatever device they are on. The caller made them on the CPU; moving the embedding
# inside the model would only hide that (and follow the steps back to the CPU). The fix is where they are made.
import math

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def step_embedding(steps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half).to(steps.device)
    angles = steps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)


class Denoiser(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.embed = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, steps):
        return self.out(x + self.embed(step_embedding(steps, self.dim)))


model = Denoiser(16).to(device)
x = torch.randn(4, 16, device=device)
for i in reversed(range(3)):
    steps = torch.tensor([i] * x.shape[0])  # devtrace: fix
    with torch.no_grad():
        x = x - 0.1 * model(x, steps)
print("norm", round(x.norm().item(), 4))
