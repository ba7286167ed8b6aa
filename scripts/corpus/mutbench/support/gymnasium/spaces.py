"""The two spaces of the gymnasium stand-in (see __init__.py)."""

import numpy as np


class Discrete:
    def __init__(self, n):
        self.n = n
        self.shape = ()

    def seed(self, seed=None):
        np.random.seed(seed)

    def sample(self):
        return np.random.randint(self.n)


class Box:
    def __init__(self, low, high, shape, dtype=np.float32):
        self.shape = tuple(shape)
        self.low = np.full(self.shape, low, dtype=dtype)
        self.high = np.full(self.shape, high, dtype=dtype)
        self.dtype = dtype

    def seed(self, seed=None):
        np.random.seed(seed)

    def sample(self):
        return np.random.uniform(self.low, self.high).astype(self.dtype)
