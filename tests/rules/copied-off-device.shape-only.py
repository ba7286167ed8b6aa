# rule: copied-off-device
# code: self.actor_mean(x).cpu() -> self.actor_mean(x)
# A Gaussian policy copies its mean to the CPU and then expands its log-std to the mean's shape: expand_as takes
# the copy for its shape only, so nothing used the copy for its values before the distribution, which mixes
# it with the device's std. The program has a device of its own, but the copy served nothing: it goes.
import torch
import torch.nn as nn
from torch.distributions.normal import Normal


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.actor_mean = nn.Linear(obs_dim, act_dim)
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def get_action(self, x):
        action_mean = self.actor_mean(x).cpu()  # devtrace: fix
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Normal(action_mean, action_std)
        return probs.sample()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    agent = Agent(4, 2).to(device)
    obs = torch.randn(3, 4).to(device)
    print("action", agent.get_action(obs).shape)


main()
