"""A stand-in for the part of gymnasium that the benchmark's RL programs use (scripts/corpus/mutbench.json):
a deterministic toy environment (4 observations, 2 actions or 1 continuous action, episodes of 8 steps), the
vector env and the wrappers as pass-throughs. Ours, not gymnasium's code; it only has to make the programs run."""

import numpy as np

from . import spaces, vector, wrappers  # noqa: F401


class Env:
    def __init__(self, continuous=False):
        self.observation_space = spaces.Box(-1.0, 1.0, (4,))
        self.action_space = spaces.Box(-1.0, 1.0, (1,)) if continuous else spaces.Discrete(2)
        self.t = 0
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self.rng.standard_normal(4).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        obs = self.rng.standard_normal(4).astype(np.float32)
        reward = float(np.sum(np.asarray(action, dtype=np.float64))) * 0.1 + 1.0
        return obs, reward, self.t >= 8, False, {}

    def close(self):
        pass


def make(env_id, render_mode=None, **kwargs):
    return Env(continuous="Continuous" in env_id or "Pendulum" in env_id or "Hopper" in env_id)
