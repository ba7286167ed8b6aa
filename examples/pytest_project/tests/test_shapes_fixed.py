# The fixed twin's step: passes on a GPU and on the cpu.
import torch

import shapes_fixed


def test_train_step(device, samples):
    model = torch.nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first = shapes_fixed.train_step(model, opt, samples)
    for _ in range(5):
        last = shapes_fixed.train_step(model, opt, samples)
    assert last < first
