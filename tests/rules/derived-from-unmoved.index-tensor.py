# rule: derived-from-unmoved
# code: obs = obs.to(device)
# The rollout buffer of derived-from-unmoved.whole-view, cut into minibatches by a cpu index tensor
# (torch.randperm): an index indexes a tensor on any device, so the minibatch is computed from the buffer
# alone, and the move goes where the buffer is made (not after the statement that failed).
import torch
import torch.nn as nn


class Agent(nn.Module):
    def __init__(self, obs_dim):
        super().__init__()
        self.critic = nn.Linear(obs_dim, 1)

    def get_value(self, x):
        return self.critic(x).squeeze(-1)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_steps, num_envs, obs_dim = 8, 2, 4
    agent = Agent(obs_dim).to(device)
    obs = torch.zeros((num_steps, num_envs, obs_dim))  # devtrace: fix
    rewards = torch.zeros((num_steps, num_envs)).to(device)
    next_obs = torch.randn(num_envs, obs_dim, device=device)
    for step in range(num_steps):
        obs[step] = next_obs
        with torch.no_grad():
            rewards[step] = agent.get_value(next_obs)
        next_obs = torch.randn(num_envs, obs_dim, device=device)

    b_obs = obs.reshape((-1, obs_dim))
    b_returns = rewards.reshape(-1)
    opt = torch.optim.SGD(agent.parameters(), lr=0.1)
    inds = torch.randperm(num_steps * num_envs)
    for start in range(0, num_steps * num_envs, 4):
        mb = inds[start:start + 4]
        newvalue = agent.get_value(b_obs[mb])
        loss = ((newvalue - b_returns[mb]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", round(loss.item(), 4))


main()
