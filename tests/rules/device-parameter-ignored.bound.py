# rule: device-parameter-ignored
# code: indices = indices.to(device)
# A timestep sampler is handed the device to put its sample on and converts numpy's draw without it; the
# caller embeds the timesteps with frequencies on the GPU. The conversion is inside the value the
# statement binds, so the move goes right after it, in the sampler, with the sampler's own parameter.
import numpy as np
import torch


class UniformSampler:
    def __init__(self, num_timesteps):
        self.num_timesteps = num_timesteps

    def sample(self, batch_size, device):
        indices_np = np.random.default_rng(0).integers(0, self.num_timesteps, size=(batch_size,))
        indices = torch.from_numpy(indices_np).long()  # devtrace: fix
        weights = torch.ones(batch_size, device=device)
        return indices, weights


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    betas = torch.linspace(1e-4, 0.02, 10, device=device)
    alphas = torch.cumprod(1.0 - betas, dim=0)
    sampler = UniformSampler(10)
    x = torch.randn(4, 3, device=device)
    t, weights = sampler.sample(4, device)
    freqs = torch.arange(3, device=device).float()
    noisy = x * alphas[t].sqrt()[:, None] + torch.sin(t[:, None].float() * freqs)
    print("loss", round((noisy.pow(2).mean(dim=1) * weights).mean().item(), 4))


main()
