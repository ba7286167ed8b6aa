# The buggy module's step: fails on a GPU (cross_entropy's labels on the cpu), passes on the cpu.
import torch

import shapes


def test_train_step(device, samples):
    model = torch.nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first = shapes.train_step(model, opt, samples)
    for _ in range(5):
        last = shapes.train_step(model, opt, samples)
    assert last < first
