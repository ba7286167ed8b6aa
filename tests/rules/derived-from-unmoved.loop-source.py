# rule: derived-from-unmoved
# code: masks = masks.to(device)
# Discounted returns over a rollout kept in preallocated buffers: the episode-end flags were allocated on the
# CPU before the rollout, and each pass of the backward loop computes its "keep" factor from them. The factor
# has a name of its own, but moving it in every pass treats the symptom: the buffer is the one to move.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
steps, envs, gamma = 6, 3, 0.9
rewards = torch.zeros(steps, envs, device=device)
masks = torch.zeros(steps, envs)  # devtrace: fix
for t in range(steps):
    rewards[t] = torch.rand(envs, device=device)
    masks[t] = (torch.rand(envs) < 0.2).float()
returns = torch.zeros(steps, envs, device=device)
running = torch.zeros(envs, device=device)
for t in reversed(range(steps)):
    keep = 1.0 - masks[t]
    running = rewards[t] + gamma * running * keep
    returns[t] = running
print("return", round(returns.sum().item(), 4))
