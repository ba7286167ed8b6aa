"""Driver (ours) for openai/improved-diffusion: a tiny UNet and a learned-sigma cosine diffusion with respaced
steps (script_util's create_model_and_diffusion), two training steps with the loss-aware sampler, then DDPM and
DDIM sampling of two 8x8 images."""

import torch

from improved_diffusion.resample import LossSecondMomentResampler
from improved_diffusion.script_util import create_model_and_diffusion, model_and_diffusion_defaults

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
opts = model_and_diffusion_defaults()
opts.update(image_size=8, num_channels=32, num_res_blocks=1, num_heads=2, attention_resolutions="4",
            diffusion_steps=20, noise_schedule="cosine", learn_sigma=True, timestep_respacing="5",
            use_kl=False, dropout=0.0)
model, diffusion = create_model_and_diffusion(**opts)
model.to(device)
sampler = LossSecondMomentResampler(diffusion)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(2, 3, 8, 8, device=device)
    t, weights = sampler.sample(2, device)
    losses = diffusion.training_losses(model, x, t)
    sampler.update_with_all_losses(t.tolist(), losses["loss"].detach().tolist())  # the non-distributed path
    loss = (losses["loss"] * weights).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    a = diffusion.p_sample_loop(model, (2, 3, 8, 8), clip_denoised=True)
    b = diffusion.ddim_sample_loop(model, (2, 3, 8, 8), clip_denoised=True)
    bpd = diffusion.calc_bpd_loop(model, x, clip_denoised=True)
print("ok", tuple(a.shape), tuple(b.shape), round(loss.item(), 3))
