# The device the tests train on: the GPU when there is one (or simulated ones, under
# `pytest --devtrace --devtrace-sim-cuda 2`), else the cpu, where both twins pass.
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def samples():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(4, generator=g), i % 3) for i in range(12)]
