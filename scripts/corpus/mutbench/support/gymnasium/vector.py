"""SyncVectorEnv of the gymnasium stand-in: N envs stepped in turn, reset when an episode ends."""

import numpy as np


class SyncVectorEnv:
    def __init__(self, thunks, **kwargs):
        self.envs = [t() for t in thunks]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space

    def reset(self, seed=None, options=None):
        obs = [e.reset(seed=None if seed is None else seed + i)[0] for i, e in enumerate(self.envs)]
        return np.stack(obs), {}

    def step(self, actions):
        out = [e.step(a) for e, a in zip(self.envs, actions)]
        obs = []
        for e, o in zip(self.envs, out):
            obs.append(e.reset()[0] if o[2] or o[3] else o[0])
        return (np.stack(obs), np.array([o[1] for o in out], dtype=np.float64),
                np.array([o[2] for o in out]), np.array([o[3] for o in out]), {})

    def close(self):
        pass
