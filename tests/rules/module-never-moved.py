# rule: module-never-moved
# code: critic = critic.to(device)
# Actor-critic: the actor is moved to the GPU, the critic built next to it is not.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2)).to(device)
critic = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))  # devtrace: fix
optimizer = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=3e-4)
for step in range(3):
    obs = torch.randn(16, 8).to(device)
    returns = torch.randn(16, 1).to(device)
    logp = torch.log_softmax(actor(obs), dim=-1)[:, 0:1]
    advantage = returns - critic(obs)
    loss = -(logp * advantage.detach()).mean() + advantage.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
