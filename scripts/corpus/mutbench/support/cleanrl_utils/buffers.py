"""A stand-in for stable-baselines3's ReplayBuffer as cleanrl_utils.buffers re-exports it (ours): a ring of numpy
arrays whose sample() returns tensors on the buffer's device, as stable-baselines3's does."""

import collections

import numpy as np
import torch

Samples = collections.namedtuple("Samples", "observations actions next_observations dones rewards")


class ReplayBuffer:
    def __init__(self, size, observation_space, action_space, device="cpu", handle_timeout_termination=True, **kw):
        self.size, self.device, self.pos, self.full = size, device, 0, False
        self.obs = np.zeros((size,) + tuple(observation_space.shape), np.float32)
        self.next_obs = np.zeros_like(self.obs)
        self.actions = np.zeros((size, max(1, len(action_space.shape))), np.int64 if not action_space.shape else np.float32)
        self.rewards = np.zeros((size, 1), np.float32)
        self.dones = np.zeros((size, 1), np.float32)

    def add(self, obs, next_obs, actions, rewards, dones, infos):
        for i in range(len(obs)):
            self.obs[self.pos], self.next_obs[self.pos] = obs[i], next_obs[i]
            self.actions[self.pos] = np.asarray(actions[i]).reshape(-1)
            self.rewards[self.pos], self.dones[self.pos] = rewards[i], dones[i]
            self.pos = (self.pos + 1) % self.size
            self.full = self.full or self.pos == 0

    def sample(self, n):
        idx = np.random.randint(0, self.size if self.full else self.pos, size=n)
        t = lambda a: torch.as_tensor(a[idx]).to(self.device)
        return Samples(t(self.obs), t(self.actions), t(self.next_obs), t(self.dones), t(self.rewards))
