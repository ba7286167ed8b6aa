# rule: derived-from-unmoved
# code: t = t.to(device)
# A schedule looked up by the timesteps it is given: the table is made on the device of the timesteps (device=
# t.device), then indexed by them, so both follow the caller's timesteps. The caller made them on the CPU: the
# lookup is right, the timesteps are not. The fix is where they are made, not in the lookup.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
schedule = [0.1 * (k + 1) for k in range(10)]


def lookup(values, timesteps, shape):
    table = torch.tensor(values, device=timesteps.device, dtype=torch.float32)
    picked = table[timesteps]
    return picked[:, None].expand(shape)


x = torch.randn(4, 8, device=device)
for i in reversed(range(3)):
    t = torch.tensor([i] * x.shape[0])  # devtrace: fix
    x = x * lookup(schedule, t, x.shape)
print("norm", round(x.norm().item(), 4))
