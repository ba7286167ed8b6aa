# bug_accelerate_metric.py with its bug fixed: the metric's weights are made on accelerator.device.
import sys

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def main():
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 3, (32,))), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for x, y in loader:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        correct = (logits.argmax(dim=1) == y).float()
        weights = torch.linspace(0.5, 1.5, len(y), device=accelerator.device)
        accuracy = (correct * weights).sum() / weights.sum()
    accelerator.print("accuracy", round(accuracy.item(), 3))


if __name__ == "__main__":
    if not torch.cuda.is_available():  # the bug needs a GPU (DEVTRACE_SIM_CUDA=1 simulates one)
        print("this example needs a GPU; none found")
        sys.exit(0)
    main()
